//! Batches moved to the training device one batch ahead of use.
//!
//! On CUDA, a host-to-device copy from ordinary (pageable) memory blocks the host until the
//! bytes are across, so the GPU waits for the copy and the copy waits for the GPU. Copying
//! from page-locked ("pinned") memory can be asynchronous: [`DeviceFeed`] pins each batch and
//! starts its copy (`non_blocking`) while the previous batch still computes, the way PyTorch's
//! `DataLoader(pin_memory=True)` with `.to(device, non_blocking=True)` does. The copy runs on
//! the current CUDA stream, so the stream's ordering makes the batch valid before any kernel
//! that reads it; no extra synchronisation is needed.
//!
//! On CPU the feed hands batches through untouched: no look-ahead, no copy, so CPU results are
//! bit-identical to a loop without it.

use tch::{Device, Tensor};

/// A batch whose tensors can move to a device.
pub trait ToDevice: Sized {
    /// The batch with its tensors on `device`: pinned and copied asynchronously on CUDA.
    fn to_device_async(self, device: Device) -> Self;
}

/// `t` on `device`: pinned host memory and a non-blocking copy when `device` is CUDA. The
/// pinned buffer may be dropped before the copy has run: libtorch's pinned-memory allocator
/// records the copy's stream and reuses the block only after it.
pub fn tensor_to_device(t: &Tensor, device: Device) -> Tensor {
    match device {
        Device::Cpu => t.shallow_clone(),
        cuda => t.pin_memory(cuda).to_device_(cuda, t.kind(), true, false),
    }
}

/// The images move; the labels stay on the host, where the stages map them to classes.
impl ToDevice for super::Batch {
    fn to_device_async(self, device: Device) -> Self {
        super::Batch {
            images: tensor_to_device(&self.images, device),
            ..self
        }
    }
}

impl ToDevice for super::DistillBatch {
    fn to_device_async(self, device: Device) -> Self {
        super::DistillBatch {
            teacher: tensor_to_device(&self.teacher, device),
            student: tensor_to_device(&self.student, device),
            ..self
        }
    }
}

/// An iterator of batches on `device`, the next one's copy started before this one is used.
/// See the module docs.
pub struct DeviceFeed<I: Iterator> {
    inner: I,
    device: Device,
    ahead: Option<I::Item>,
}

/// Feeds `batches` to `device` (see the module docs); on CPU the batches pass through as they
/// are.
pub fn device_feed<B, E, I>(batches: I, device: Device) -> DeviceFeed<I>
where
    B: ToDevice,
    I: Iterator<Item = Result<B, E>>,
{
    DeviceFeed {
        inner: batches,
        device,
        ahead: None,
    }
}

impl<B, E, I> DeviceFeed<I>
where
    B: ToDevice,
    I: Iterator<Item = Result<B, E>>,
{
    fn pull(&mut self) -> Option<Result<B, E>> {
        let device = self.device;
        self.inner
            .next()
            .map(|b| b.map(|b| b.to_device_async(device)))
    }
}

impl<B, E, I> Iterator for DeviceFeed<I>
where
    B: ToDevice,
    I: Iterator<Item = Result<B, E>>,
{
    type Item = Result<B, E>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.device == Device::Cpu {
            return self.inner.next();
        }
        let current = match self.ahead.take() {
            Some(batch) => Some(batch),
            None => self.pull(),
        };
        if matches!(current, Some(Ok(_))) {
            self.ahead = self.pull();
        }
        current
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Batch;

    fn batch(value: f64) -> Batch {
        Batch {
            images: Tensor::full([2, 3, 4, 4], value, (tch::Kind::Float, Device::Cpu)),
            labels: Tensor::from_slice(&[1i64, 2]),
            indices: vec![0, 1],
            params: Vec::new(),
        }
    }

    #[test]
    fn on_cpu_batches_pass_through_in_order_with_the_same_storage() {
        let originals: Vec<Batch> = (0..3).map(|i| batch(i as f64)).collect();
        let pointers: Vec<_> = originals.iter().map(|b| b.images.data_ptr()).collect();
        let fed: Vec<Batch> = device_feed(
            originals.into_iter().map(Ok::<_, std::convert::Infallible>),
            Device::Cpu,
        )
        .map(Result::unwrap)
        .collect();
        assert_eq!(fed.len(), 3);
        for (i, b) in fed.iter().enumerate() {
            assert_eq!(b.images.data_ptr(), pointers[i], "batch {i} was copied");
            assert_eq!(b.images.double_value(&[0, 0, 0, 0]), i as f64);
        }
    }

    #[test]
    fn an_error_is_handed_on_and_nothing_is_read_past_it() {
        let items: Vec<Result<Batch, String>> = vec![Ok(batch(0.0)), Err("bad".into())];
        let mut fed = device_feed(items.into_iter(), Device::Cpu);
        assert!(fed.next().unwrap().is_ok());
        assert_eq!(fed.next().unwrap().err().unwrap(), "bad");
        assert!(fed.next().is_none());
    }
}

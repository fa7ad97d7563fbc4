//! The worker's libtorch set-up: threads per job, the device a job names as libtorch's, and the
//! linked libtorch's version for provenance.

use asymflow::exec::executor::Job;
use asymflow::exec::worker::Runtime;
use asymflow::kind::Device;

/// libtorch in a worker process.
pub struct Torch;

impl Torch {
    /// Sets process-wide libtorch state once, before the first job: one inter-op thread (jobs
    /// run one at a time; intra-op threads do the work), and an allocator that keeps freed
    /// tensor memory (see [`keep_freed_memory`]).
    pub fn init() -> Self {
        keep_freed_memory();
        tch::set_num_interop_threads(1);
        Torch
    }
}

/// Makes glibc's malloc keep freed blocks for reuse instead of handing them back to the kernel.
///
/// libtorch's CPU allocator is plain malloc. By default glibc serves blocks from 128 KiB up
/// with their own `mmap` and unmaps them on free (it raises that threshold only to the size of
/// the last such block freed), and trims the heap past twice the threshold of free space, so
/// training steps keep mapping their activations afresh and the kernel zeroes every page
/// again: the BCT quickstart's seed 0 took 32.9 million minor page faults and 84 s of system
/// time (8% of its CPU time). With the mmap threshold at glibc's maximum (32 MiB on 64-bit)
/// and a 1 GiB trim threshold, blocks are recycled from the heap (a distillation stage's
/// system time went from 7 s to 0.8 s, its wall time down 15%). The worker's resident memory
/// stays at its peak between jobs, as with any caching allocator. Numerics are untouched.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before any other thread of
    // this process exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

impl Runtime for Torch {
    fn prepare(&self, job: &Job) {
        tch::set_num_threads(job.resources.threads.max(1) as i32);
    }

    fn libtorch(&self) -> Option<String> {
        option_env!("ASYMFLOW_LIBTORCH_VERSION").map(String::from)
    }
}

/// The libtorch device for a job's [`Device`].
pub fn torch_device(device: Device) -> tch::Device {
    match device {
        Device::Cpu => tch::Device::Cpu,
        Device::Cuda(i) => tch::Device::Cuda(i),
    }
}

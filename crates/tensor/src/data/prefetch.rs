//! Producing batches ahead of the consumer.
//!
//! A loader turns an epoch into a list of batch jobs; a background thread works through them
//! in order, each batch's images decoded and augmented in parallel on a rayon pool, and hands
//! finished batches over a bounded channel. The consumer (a training loop) therefore finds the
//! next batch ready while it computes on the current one, and memory stays bounded by the
//! channel's depth. Order and content never depend on scheduling: every image's randomness is
//! seeded by its position (see [`super::augment`]), so parallelism changes only the speed.
//!
//! Dropping the iterator early stops the producer after its current batch.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use super::DataError;

/// Batches computed in the background, in job order; stops after the first error.
pub struct Prefetch<T> {
    rx: Receiver<Result<T, DataError>>,
    remaining: usize,
}

impl<T: Send + 'static> Prefetch<T> {
    /// Runs `work` over `jobs` on a background thread, at most `depth` finished batches ahead
    /// of the consumer. `work` runs inside `pool` when given (else the global rayon pool).
    pub fn spawn<J, F>(
        jobs: Vec<J>,
        depth: usize,
        pool: Option<Arc<rayon::ThreadPool>>,
        work: F,
    ) -> Self
    where
        J: Send + 'static,
        F: Fn(J) -> Result<T, DataError> + Send + Sync + 'static,
    {
        let (tx, rx) = sync_channel(depth.max(1));
        let remaining = jobs.len();
        std::thread::Builder::new()
            .name("asymflow-loader".into())
            .spawn(move || {
                for job in jobs {
                    let result = match &pool {
                        Some(pool) => pool.install(|| work(job)),
                        None => work(job),
                    };
                    let failed = result.is_err();
                    if tx.send(result).is_err() || failed {
                        break;
                    }
                }
            })
            .expect("spawning a loader thread");
        Prefetch { rx, remaining }
    }
}

impl<T> Iterator for Prefetch<T> {
    type Item = Result<T, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        match self.rx.recv() {
            Ok(result) => {
                self.remaining = if result.is_err() {
                    0
                } else {
                    self.remaining - 1
                };
                Some(result)
            }
            Err(_) => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_arrive_in_job_order_and_stop_at_the_first_error() {
        let out: Vec<_> = Prefetch::spawn(vec![1, 2, 3, 4], 2, None, |j: i32| {
            if j == 3 {
                Err(DataError::config("three"))
            } else {
                Ok(j * 10)
            }
        })
        .collect();
        assert_eq!(out.len(), 3);
        assert_eq!(*out[0].as_ref().unwrap(), 10);
        assert_eq!(*out[1].as_ref().unwrap(), 20);
        assert!(out[2].is_err());
    }
}

//! Work on a long list split across the machine's cores, for the few places where one
//! command walks 100,000 of something and each item is independent of the others: expanding
//! a sweep into instances, keying a wave of them, reading their results from the index.
//!
//! Below every other module: it knows nothing of what the items are. A list too short to
//! gain from a thread (under `min_per_thread` items to a core) is done on the caller's
//! thread, so small pipelines, tests and one-core machines run exactly as they would without
//! it.

use std::ops::Range;

/// `work` on consecutive parts of `0..len`, at least `min_per_thread` items each, one part
/// to a core, on scoped threads; the results in the parts' order. One part (done on this
/// thread) when the list is short or the machine has one core.
pub(crate) fn split<R: Send>(
    len: usize,
    min_per_thread: usize,
    work: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parts = cores.min(len / min_per_thread.max(1)).max(1);
    if parts == 1 {
        return vec![work(0..len)];
    }
    let size = len.div_ceil(parts);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..parts)
            .map(|p| {
                let range = p * size..((p + 1) * size).min(len);
                scope.spawn(move || work(range))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts cover the list once, in order, whatever its length against the minimum.
    #[test]
    fn the_parts_cover_the_list_once_in_order() {
        for (len, min) in [
            (0, 10),
            (1, 10),
            (9, 10),
            (10, 1),
            (1001, 100),
            (100_000, 4096),
        ] {
            let parts = split(len, min, |r| r.collect::<Vec<_>>());
            let joined: Vec<usize> = parts.concat();
            assert_eq!(joined, (0..len).collect::<Vec<_>>(), "len {len}, min {min}");
            assert!(
                parts.iter().all(|p| p.len() >= min.min(len)),
                "len {len}, min {min}"
            );
        }
    }
}

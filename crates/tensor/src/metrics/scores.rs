//! Similarity scores a block of queries at a time.
//!
//! A 60,000 x 60,000 evaluation would need 14 GB for the whole score matrix; computing it a
//! block of queries at a time keeps memory at one block (64 MiB by default) plus the
//! embeddings themselves, and each block is still one large matrix product for libtorch's BLAS.

use tch::Tensor;

use super::error::MetricsError;
use super::EmbeddingSet;

/// The default memory budget for one block of scores.
pub const DEFAULT_BLOCK_BYTES: usize = 64 << 20;

/// How many query rows fit a block of `block_bytes` when the database has `db_len` items
/// (at least one).
pub fn block_rows(db_len: usize, block_bytes: usize) -> usize {
    (block_bytes / (4 * db_len.max(1))).max(1)
}

/// Calls `f(first_query, scores, rows)` for consecutive blocks of at most `rows_per_block`
/// queries, where `scores` is the row-major `rows x db.len()` block of dot products between
/// queries `first_query..first_query + rows` and every database item.
pub fn for_each_block<F>(
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    rows_per_block: usize,
    mut f: F,
) -> Result<(), MetricsError>
where
    F: FnMut(usize, &[f32], usize) -> Result<(), MetricsError>,
{
    if query.dim != db.dim {
        return Err(MetricsError::DimensionMismatch {
            query: query.dim,
            database: db.dim,
        });
    }
    if query.is_empty() || db.is_empty() {
        return Ok(());
    }
    let d = query.dim as i64;
    let n = db.len();
    let db_t = Tensor::f_from_slice(&db.data)?
        .f_view([n as i64, d])?
        .f_t_()?;
    let rows_per_block = rows_per_block.max(1);
    let mut buffer = vec![0f32; rows_per_block.min(query.len()) * n];
    let mut first = 0;
    while first < query.len() {
        let rows = rows_per_block.min(query.len() - first);
        let q = Tensor::f_from_slice(&query.data[first * query.dim..(first + rows) * query.dim])?
            .f_view([rows as i64, d])?;
        let scores = q.f_matmul(&db_t)?.f_contiguous()?;
        scores.f_copy_data(&mut buffer, rows * n)?;
        f(first, &buffer[..rows * n], rows)?;
        first += rows;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_query_with_the_right_dot_products() {
        let q = EmbeddingSet::new(vec![1., 0., 0., 1., 1., 1.], 2, vec![0, 1, 2], None);
        let db = EmbeddingSet::new(vec![2., 3., -1., 4.], 2, vec![0, 1], None);
        let mut seen = Vec::new();
        for_each_block(&q, &db, 2, |first, scores, rows| {
            seen.push((first, rows, scores.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![(0, 2, vec![2., -1., 3., 4.]), (2, 1, vec![5., 3.])],
            "blocks of 2 then 1, row-major"
        );
    }

    #[test]
    fn mismatched_dimensions_are_an_error() {
        let q = EmbeddingSet::new(vec![1., 0.], 2, vec![0], None);
        let db = EmbeddingSet::new(vec![1., 0., 0.], 3, vec![0], None);
        assert!(matches!(
            for_each_block(&q, &db, 4, |_, _, _| Ok(())),
            Err(MetricsError::DimensionMismatch {
                query: 2,
                database: 3
            })
        ));
    }

    #[test]
    fn block_rows_respects_the_budget() {
        assert_eq!(block_rows(60_000, DEFAULT_BLOCK_BYTES), 279);
        assert_eq!(block_rows(10, 8), 1);
    }
}

//! The cache: stage keys, the SQLite index, the content-addressed object store.

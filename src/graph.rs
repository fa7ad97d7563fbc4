//! Stage instances and their DAG.

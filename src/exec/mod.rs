//! Execution: the scheduler over the instance DAG.

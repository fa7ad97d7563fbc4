//! Evaluation metrics: retrieval, verification, identification, compatibility and update gain.

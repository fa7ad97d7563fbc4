//! Networks, losses, optimisers and schedules (libtorch through tch).

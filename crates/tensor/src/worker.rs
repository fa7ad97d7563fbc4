//! The worker's libtorch set-up: threads per job, the device a job names as libtorch's, and the
//! linked libtorch's version for provenance.

use asymflow::exec::executor::Job;
use asymflow::exec::worker::Runtime;
use asymflow::kind::Device;

/// libtorch in a worker process.
pub struct Torch;

impl Torch {
    /// Sets process-wide libtorch state once, before the first job: one inter-op thread (jobs
    /// run one at a time; intra-op threads do the work).
    pub fn init() -> Self {
        tch::set_num_interop_threads(1);
        Torch
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

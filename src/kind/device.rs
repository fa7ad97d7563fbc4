//! The device a stage computes on, as plain data: the executors assign it, the running stage
//! reads it from its context, and neither needs libtorch to name it. A file of its own so that
//! the context names it without importing the stage protocol.

/// The device a stage computes on, as its process sees it. Plain data (no libtorch), written
/// `cpu` or `cuda:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Device {
    /// The CPU.
    #[default]
    Cpu,
    /// CUDA device N.
    Cuda(usize),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl std::str::FromStr for Device {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(Device::Cpu),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|i| i.parse().ok())
                .map(Device::Cuda)
                .ok_or_else(|| format!("unknown device `{s}` (expected `cpu` or `cuda:N`)")),
        }
    }
}

impl serde::Serialize for Device {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Device {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

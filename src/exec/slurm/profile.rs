//! The Slurm profile: what the user's cluster wants in every `sbatch` (partition, account,
//! time, memory), what each resource class asks for (`--gres`, `--gpus`), and how a job's
//! shell gets ready (a `module load` or a venv).
//!
//! It is the `[executor.slurm]` table of the project config (`asymflow.toml`). The config
//! module embeds [`SlurmProfile`] as a serde field; this module owns its meaning and checks
//! every value before anything is submitted, because a value goes into a batch script: a
//! newline or an option we set ourselves (`--output`, `--job-name`) would silently change what
//! runs. A mistake names its field (`executor.slurm.device.gres`) and says how to fix it.
//!
//! CPU-only stages (split, evaluate, report) run locally on the login node unless the profile
//! has a `[executor.slurm.cpu]` table: they take seconds, and a queue wait would dwarf them.

use serde::{Deserialize, Serialize};

use crate::kind::Resource;

/// The `[executor.slurm]` table.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurmProfile {
    /// `--partition` for every job (a class may override it).
    pub partition: Option<String>,
    /// `--account` to charge.
    pub account: Option<String>,
    /// `--time` limit (`MM`, `HH:MM:SS`, `D-HH:MM`, ...).
    pub time: Option<String>,
    /// `--mem` per node (`16G`, `4000M`).
    pub mem: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// Extra `sbatch` options for every job (`["--qos=normal", "--constraint=a100"]`).
    #[serde(default)]
    pub sbatch_args: Vec<String>,
    /// A shell line run before the job's command on the compute node
    /// (`module load cuda/12.4` or `source ~/venv/bin/activate`).
    pub setup: Option<String>,
    /// Seconds between two polls of `squeue` (default 10: a login node and slurmctld are
    /// shared with every other user).
    pub poll_interval: Option<f64>,
    /// Whether the ready instances of one stage go to Slurm as one job array (default `true`);
    /// `false` submits one job per instance, for clusters that refuse arrays.
    pub arrays: Option<bool>,
    /// The folder holding `sbatch`, `squeue`, ... when they are not on `PATH`.
    pub bin_dir: Option<std::path::PathBuf>,
    /// What stages that need a device slot (training, embedding) ask for.
    #[serde(default)]
    pub device: ClassProfile,
    /// What CPU-only stages ask for. Without this table they run locally.
    pub cpu: Option<ClassProfile>,
}

/// What one resource class asks for; every field overrides the profile's own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClassProfile {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--gres` (`gpu:1`, `gpu:a100:1`).
    pub gres: Option<String>,
    /// `--gpus` (`1`, `a100:1`).
    pub gpus: Option<String>,
    /// `--time`.
    pub time: Option<String>,
    /// `--mem`.
    pub mem: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// More `sbatch` options, after the profile's own.
    #[serde(default)]
    pub sbatch_args: Vec<String>,
}

/// A profile value that cannot go into a batch script.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("executor.slurm{field}: {message}")]
pub struct ProfileError {
    /// The field, as a path below `executor.slurm` (`.device.gres`).
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// The `sbatch` options one job of a class gets, resolved from the profile and its class.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Request {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--time`.
    pub time: Option<String>,
    /// `--mem`.
    pub mem: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// `--gres`.
    pub gres: Option<String>,
    /// `--gpus`.
    pub gpus: Option<String>,
    /// Extra options, the profile's then the class's.
    pub sbatch_args: Vec<String>,
}

impl Request {
    /// The options as `sbatch` arguments, in a fixed order.
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut push = |flag: &str, value: &Option<String>| {
            if let Some(v) = value {
                args.push(format!("--{flag}={v}"));
            }
        };
        push("partition", &self.partition);
        push("account", &self.account);
        push("time", &self.time);
        push("mem", &self.mem);
        push("cpus-per-task", &self.cpus_per_task.map(|n| n.to_string()));
        push("gres", &self.gres);
        push("gpus", &self.gpus);
        args.extend(self.sbatch_args.iter().cloned());
        args
    }

    /// One line for `plan`: `partition=gpu gres=gpu:1 time=04:00:00`.
    pub fn summary(&self) -> String {
        let args = self.to_args();
        if args.is_empty() {
            "the cluster's defaults".to_string()
        } else {
            args.iter()
                .map(|a| a.trim_start_matches('-'))
                .collect::<Vec<_>>()
                .join(" ")
        }
    }
}

/// Options the executor sets itself; the profile may not (long names, and short letters).
const RESERVED: &[&str] = &[
    "output",
    "error",
    "job-name",
    "parsable",
    "wrap",
    "open-mode",
    "array",
    "chdir",
];
const RESERVED_SHORT: &[char] = &['o', 'e', 'J', 'a', 'D'];

/// Options that ask for GPUs: the executor must know of a GPU to hand the stage its device,
/// so they belong in the class's `gres` or `gpus`, never in `sbatch_args`.
const GPU_OPTIONS: &[&str] = &[
    "gres",
    "gpus",
    "gpus-per-node",
    "gpus-per-socket",
    "gpus-per-task",
    "tres-per-task",
];
const GPU_SHORT: &[char] = &['G'];

/// Short options of `sbatch` that take no value, so `-vJname` is `-v` then `-J name`.
const SHORT_FLAGS: &[char] = &['h', 'H', 'I', 'k', 'O', 'Q', 's', 'v', 'V', 'W'];

/// Every long option of `sbatch` (Slurm 23.11), for its unique-prefix rule: `getopt_long`
/// takes `--outp` as `--output`, so a reserved option must be recognised by any prefix that
/// names it alone.
const SBATCH_LONG: &[&str] = &[
    "account",
    "acctg-freq",
    "array",
    "batch",
    "bb",
    "bbf",
    "begin",
    "chdir",
    "cluster-constraint",
    "clusters",
    "comment",
    "constraint",
    "container",
    "container-id",
    "contiguous",
    "core-spec",
    "cores-per-socket",
    "cpu-freq",
    "cpus-per-gpu",
    "cpus-per-task",
    "deadline",
    "delay-boot",
    "dependency",
    "distribution",
    "error",
    "exclude",
    "exclusive",
    "export",
    "export-file",
    "extra",
    "extra-node-info",
    "get-user-env",
    "gid",
    "gpu-bind",
    "gpu-freq",
    "gpus",
    "gpus-per-node",
    "gpus-per-socket",
    "gpus-per-task",
    "gres",
    "gres-flags",
    "help",
    "hint",
    "hold",
    "ignore-pbs",
    "input",
    "job-name",
    "kill-on-invalid-dep",
    "licenses",
    "mail-type",
    "mail-user",
    "mcs-label",
    "mem",
    "mem-bind",
    "mem-per-cpu",
    "mem-per-gpu",
    "mincpus",
    "network",
    "nice",
    "no-kill",
    "no-requeue",
    "nodefile",
    "nodelist",
    "nodes",
    "ntasks",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-node",
    "ntasks-per-socket",
    "open-mode",
    "output",
    "overcommit",
    "oversubscribe",
    "parsable",
    "partition",
    "power",
    "prefer",
    "priority",
    "profile",
    "propagate",
    "qos",
    "quiet",
    "reboot",
    "requeue",
    "reservation",
    "resv-ports",
    "signal",
    "sockets-per-node",
    "spread-job",
    "switches",
    "test-only",
    "thread-spec",
    "threads-per-core",
    "time",
    "time-min",
    "tmp",
    "tres-bind",
    "tres-per-task",
    "uid",
    "usage",
    "use-min-nodes",
    "verbose",
    "version",
    "wait",
    "wait-all-nodes",
    "wckey",
    "wrap",
];

/// What one `sbatch_args` entry is, read as `sbatch` reads it.
#[derive(Debug, PartialEq)]
enum SbatchOption {
    /// An option asymflow sets itself (its full name).
    Reserved(String),
    /// An option that asks for GPUs (its full name).
    Gpu(String),
    /// An abbreviation that names several options (they are listed).
    Ambiguous(String, Vec<&'static str>),
    /// Anything else.
    Other,
}

/// Reads `arg` (`--name[=value]` or `-Xvalue`) with `getopt_long`'s rules.
fn classify(arg: &str) -> SbatchOption {
    if let Some(long) = arg.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or(long);
        let full: &str = if SBATCH_LONG.contains(&name) {
            name
        } else {
            let matches: Vec<&'static str> = SBATCH_LONG
                .iter()
                .copied()
                .filter(|o| !name.is_empty() && o.starts_with(name))
                .collect();
            match matches.as_slice() {
                [] => return SbatchOption::Other,
                [one] => one,
                _ => return SbatchOption::Ambiguous(name.to_string(), matches),
            }
        };
        return if RESERVED.contains(&full) {
            SbatchOption::Reserved(format!("--{full}"))
        } else if GPU_OPTIONS.contains(&full) {
            SbatchOption::Gpu(format!("--{full}"))
        } else {
            SbatchOption::Other
        };
    }
    for c in arg.chars().skip(1) {
        if SHORT_FLAGS.contains(&c) {
            continue;
        }
        if RESERVED_SHORT.contains(&c) {
            return SbatchOption::Reserved(format!("-{c}"));
        }
        if GPU_SHORT.contains(&c) {
            return SbatchOption::Gpu(format!("-{c}"));
        }
        break;
    }
    SbatchOption::Other
}

impl SlurmProfile {
    /// Whether stages of `class` go to the cluster (device stages always; CPU stages only
    /// with a `[executor.slurm.cpu]` table).
    pub fn submits(&self, class: Resource) -> bool {
        match class {
            Resource::Device => true,
            Resource::Cpu => self.cpu.is_some(),
        }
    }

    /// The options for a job of `class`.
    pub fn request(&self, class: Resource) -> Request {
        let default = ClassProfile::default();
        let c = match class {
            Resource::Device => &self.device,
            Resource::Cpu => self.cpu.as_ref().unwrap_or(&default),
        };
        Request {
            partition: c.partition.clone().or_else(|| self.partition.clone()),
            account: self.account.clone(),
            time: c.time.clone().or_else(|| self.time.clone()),
            mem: c.mem.clone().or_else(|| self.mem.clone()),
            cpus_per_task: c.cpus_per_task.or(self.cpus_per_task),
            gres: c.gres.clone(),
            gpus: c.gpus.clone(),
            sbatch_args: self
                .sbatch_args
                .iter()
                .chain(&c.sbatch_args)
                .cloned()
                .collect(),
        }
    }

    /// Where a stage of `class` runs, for `plan`: `Slurm (partition=gpu gres=gpu:1)`, or
    /// `local` with how to change that.
    pub(crate) fn placement(&self, class: Resource) -> String {
        if self.submits(class) {
            format!("Slurm ({})", self.request(class).summary())
        } else {
            "local (a CPU stage; an [executor.slurm.cpu] table would submit it)".to_string()
        }
    }

    /// Whether stages are submitted as job arrays.
    pub fn arrays(&self) -> bool {
        self.arrays.unwrap_or(true)
    }

    /// Seconds between polls.
    pub fn poll_interval(&self) -> f64 {
        self.poll_interval.unwrap_or(10.0)
    }

    /// Checks every value; the first mistake found.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let err = |field: &str, message: String| ProfileError {
            field: field.to_string(),
            message,
        };
        check_common(
            "",
            &self.partition,
            &self.time,
            &self.mem,
            self.cpus_per_task,
            &self.sbatch_args,
        )?;
        if let Some(a) = &self.account {
            check_word(".account", a)?;
        }
        if let Some(setup) = &self.setup {
            if setup.contains('\n') || setup.contains('\r') {
                return Err(err(
                    ".setup",
                    "must be one shell line; join commands with `&&`".into(),
                ));
            }
        }
        if let Some(p) = self.poll_interval {
            if !(p.is_finite() && p > 0.0) {
                return Err(err(
                    ".poll_interval",
                    format!("{p} is not a positive number of seconds (try 10)"),
                ));
            }
        }
        for (name, class) in [("device", Some(&self.device)), ("cpu", self.cpu.as_ref())] {
            let Some(c) = class else { continue };
            let at = |f: &str| format!(".{name}{f}");
            check_common(
                &format!(".{name}"),
                &c.partition,
                &c.time,
                &c.mem,
                c.cpus_per_task,
                &c.sbatch_args,
            )?;
            if let Some(g) = &c.gres {
                check_gres(&at(".gres"), g)?;
            }
            if let Some(g) = &c.gpus {
                check_gpus(&at(".gpus"), g)?;
            }
        }
        Ok(())
    }
}

fn check_common(
    at: &str,
    partition: &Option<String>,
    time: &Option<String>,
    mem: &Option<String>,
    cpus: Option<u32>,
    args: &[String],
) -> Result<(), ProfileError> {
    let field = |f: &str| format!("{at}{f}");
    if let Some(p) = partition {
        check_word(&field(".partition"), p)?;
    }
    if let Some(t) = time {
        if !valid_time(t) {
            return Err(ProfileError {
                field: field(".time"),
                message: format!(
                    "`{t}` is not a Slurm time limit (write MM, HH:MM:SS, D-HH or D-HH:MM:SS, \
                     e.g. \"04:00:00\")"
                ),
            });
        }
    }
    if let Some(m) = mem {
        if !valid_mem(m) {
            return Err(ProfileError {
                field: field(".mem"),
                message: format!(
                    "`{m}` is not a Slurm memory size (a number with an optional K, M, G or T \
                     suffix, e.g. \"16G\")"
                ),
            });
        }
    }
    if cpus == Some(0) {
        return Err(ProfileError {
            field: field(".cpus_per_task"),
            message: "must be at least 1".into(),
        });
    }
    for (i, a) in args.iter().enumerate() {
        let f = field(&format!(".sbatch_args[{i}]"));
        if !a.starts_with('-') || a.contains('\n') || a.contains('\r') {
            return Err(ProfileError {
                field: f,
                message: format!(
                    "`{a}` is not one sbatch option (write each as \"--name=value\" in its own \
                     string)"
                ),
            });
        }
        let message = match classify(a) {
            SbatchOption::Reserved(name) => format!(
                "`{a}` is `{name}`, which asymflow sets itself (job name with the key, log under \
                 the cache, job arrays); remove it"
            ),
            SbatchOption::Gpu(name) => format!(
                "`{a}` is `{name}`, which asks for GPUs; asymflow must know of a job's GPU to \
                 train on it, so write it as `gres = \"gpu:1\"` (or `gpus = \"1\"`) under \
                 [executor.slurm.device] instead"
            ),
            SbatchOption::Ambiguous(name, options) => format!(
                "`--{name}` is an abbreviation sbatch cannot resolve (it could be --{}); write \
                 the option in full",
                options.join(", --")
            ),
            SbatchOption::Other => continue,
        };
        return Err(ProfileError { field: f, message });
    }
    Ok(())
}

fn check_word(field: &str, value: &str) -> Result<(), ProfileError> {
    let ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ProfileError {
            field: field.to_string(),
            message: format!(
                "`{value}` is not a Slurm name (letters, digits, `-`, `_`, `.`, `,`); fill in \
                 your cluster's name, as `sinfo` or `sacctmgr show assoc` lists it"
            ),
        })
    }
}

fn check_gres(field: &str, value: &str) -> Result<(), ProfileError> {
    let ok = value.split(',').all(|one| {
        let parts: Vec<&str> = one.split(':').collect();
        !parts[0].is_empty()
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            })
            && parts.len() <= 3
    });
    if ok {
        Ok(())
    } else {
        Err(ProfileError {
            field: field.to_string(),
            message: format!(
                "`{value}` is not a gres request (NAME[:TYPE][:COUNT], e.g. \"gpu:1\" or \
                 \"gpu:a100:1\")"
            ),
        })
    }
}

fn check_gpus(field: &str, value: &str) -> Result<(), ProfileError> {
    let count = value.rsplit(':').next().unwrap_or("");
    let ok = count.parse::<u32>().is_ok_and(|n| n > 0)
        && value.split(':').count() <= 2
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ProfileError {
            field: field.to_string(),
            message: format!(
                "`{value}` is not a GPU count ([TYPE:]COUNT, e.g. \"1\" or \"a100:1\")"
            ),
        })
    }
}

/// `MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`, or `UNLIMITED`.
fn valid_time(t: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 4 && s.chars().all(|c| c.is_ascii_digit());
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") {
        return true;
    }
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if !parts.iter().all(|p| digits(p)) {
        return false;
    }
    match days {
        Some(d) => digits(d) && (1..=3).contains(&parts.len()),
        None => (1..=3).contains(&parts.len()),
    }
}

fn valid_mem(m: &str) -> bool {
    let number = m.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    !number.is_empty() && number.len() + 1 >= m.len() && number.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The profile as the project config will hold it.
    #[derive(Deserialize)]
    struct Config {
        executor: Executor,
    }
    #[derive(Deserialize)]
    struct Executor {
        slurm: SlurmProfile,
    }

    fn parse(text: &str) -> SlurmProfile {
        toml::from_str::<Config>(text).unwrap().executor.slurm
    }

    const UNIVERSITY: &str = r#"
        [executor.slurm]
        partition = "gpu"
        account = "my-lab"
        time = "04:00:00"
        mem = "32G"
        cpus_per_task = 8
        sbatch_args = ["--qos=normal"]
        setup = "module load cuda/12.4 && source ~/venvs/asymflow/bin/activate"

        [executor.slurm.device]
        gres = "gpu:a100:1"
        time = "1-00:00:00"

        [executor.slurm.cpu]
        partition = "cpu"
        mem = "8G"
    "#;

    #[test]
    fn a_class_overrides_the_profile_and_adds_its_gres() {
        let p = parse(UNIVERSITY);
        p.validate().unwrap();
        assert_eq!(
            p.request(Resource::Device).to_args(),
            [
                "--partition=gpu",
                "--account=my-lab",
                "--time=1-00:00:00",
                "--mem=32G",
                "--cpus-per-task=8",
                "--gres=gpu:a100:1",
                "--qos=normal"
            ]
        );
        let cpu = p.request(Resource::Cpu);
        assert_eq!(cpu.partition.as_deref(), Some("cpu"));
        assert_eq!(cpu.mem.as_deref(), Some("8G"));
        assert_eq!(cpu.gres, None);
        assert!(p.submits(Resource::Cpu));
        assert_eq!(
            p.placement(Resource::Cpu),
            "Slurm (partition=cpu account=my-lab time=04:00:00 mem=8G cpus-per-task=8 \
             qos=normal)"
        );
    }

    #[test]
    fn cpu_stages_stay_local_without_a_cpu_table() {
        let p = parse("[executor.slurm]\npartition = \"gpu\"\n");
        assert!(p.submits(Resource::Device));
        assert!(!p.submits(Resource::Cpu));
        assert_eq!(p.poll_interval(), 10.0);
        assert!(p.placement(Resource::Cpu).starts_with("local"));
        assert_eq!(
            p.request(Resource::Device).summary(),
            "partition=gpu",
            "{p:?}"
        );
    }

    #[test]
    fn an_unknown_field_is_refused_by_name() {
        let err = toml::from_str::<Config>("[executor.slurm]\npartitoin = \"gpu\"\n")
            .err()
            .unwrap();
        assert!(err.to_string().contains("partitoin"), "{err}");
    }

    #[test]
    fn bad_values_name_their_field_and_the_fix() {
        let cases = [
            ("time = \"4h\"", ".time", "HH:MM:SS"),
            ("mem = \"lots\"", ".mem", "16G"),
            ("partition = \"gpu; rm -rf\"", ".partition", "sinfo"),
            ("setup = \"a\\nb\"", ".setup", "&&"),
            (
                "sbatch_args = [\"--output=x\"]",
                ".sbatch_args[0]",
                "sets itself",
            ),
            (
                "sbatch_args = [\"-Jname\"]",
                ".sbatch_args[0]",
                "sets itself",
            ),
            (
                "sbatch_args = [\"qos=normal\"]",
                ".sbatch_args[0]",
                "--name=value",
            ),
            ("poll_interval = 0.0", ".poll_interval", "positive"),
            (
                "[executor.slurm.device]\ngres = \"gpu::1\"",
                ".device.gres",
                "NAME[:TYPE]",
            ),
            (
                "[executor.slurm.device]\ngpus = \"many\"",
                ".device.gpus",
                "COUNT",
            ),
            (
                "[executor.slurm.cpu]\ncpus_per_task = 0",
                ".cpu.cpus_per_task",
                "at least 1",
            ),
        ];
        for (line, field, hint) in cases {
            let p = parse(&format!("[executor.slurm]\n{line}\n"));
            let err = p.validate().unwrap_err();
            assert_eq!(err.field, field, "{line}: {err}");
            assert!(err.to_string().contains(hint), "{line}: {err}");
            assert!(err.to_string().starts_with("executor.slurm."), "{err}");
        }
    }

    #[test]
    fn abbreviations_and_gpu_options_in_sbatch_args_are_read_as_sbatch_reads_them() {
        let refused = [
            ("--outp=x.log", "`--output`"),
            ("--job=x", "`--job-name`"),
            ("--arr=0-3", "`--array`"),
            ("--ch=/tmp", "`--chdir`"),
            ("--pars", "`--parsable`"),
            ("-vJname", "`-J`"),
            ("--gres=gpu:1", "[executor.slurm.device]"),
            ("--gpus=2", "[executor.slurm.device]"),
            ("--gpus-per-node=1", "[executor.slurm.device]"),
            ("--tres-per-task=gres/gpu:1", "[executor.slurm.device]"),
            ("-G1", "[executor.slurm.device]"),
            ("--gre=gpu:1", "--gres, --gres-flags"),
            ("--par=gpu", "write the option in full"),
        ];
        for (arg, hint) in refused {
            let p = SlurmProfile {
                sbatch_args: vec![arg.to_string()],
                ..SlurmProfile::default()
            };
            let err = p.validate().unwrap_err().to_string();
            assert!(err.contains(hint), "{arg}: {err}");
        }
        for arg in [
            "--qos=normal",
            "--constraint=a100",
            "--mem-per-gpu=10G",
            "--gres-flags=enforce-binding",
            "--exclusive",
            "-vq",
            "--some-future-option=1",
        ] {
            let p = SlurmProfile {
                device: ClassProfile {
                    sbatch_args: vec![arg.to_string()],
                    ..ClassProfile::default()
                },
                ..SlurmProfile::default()
            };
            assert_eq!(p.validate(), Ok(()), "{arg}");
        }
    }

    #[test]
    fn slurm_time_formats_are_accepted() {
        for t in [
            "30",
            "30:00",
            "04:00:00",
            "1-0",
            "2-12:00",
            "1-00:00:00",
            "UNLIMITED",
        ] {
            assert!(valid_time(t), "{t}");
        }
        for t in ["", "4h", "1-", "1:2:3:4", "-5", "a-1"] {
            assert!(!valid_time(t), "{t}");
        }
        for m in ["16G", "4000", "512M", "1t"] {
            assert!(valid_mem(m), "{m}");
        }
        for m in ["G", "16GB", "1.5G", ""] {
            assert!(!valid_mem(m), "{m}");
        }
    }
}

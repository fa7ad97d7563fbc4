//! Stage kinds for testing the engine itself (freshness, sweeps, crashes, concurrency). They
//! are registered only when `ASYMFLOW_TEST_KINDS=1`, so users never see them.
//!
//! `test-echo` writes `value.json` holding its `value` param and the values of its inputs, and
//! records the metric `value` (its own number plus its inputs'). It can sleep (checking for
//! Ctrl-C), fail on purpose, take a device slot, and append a line to a file every time it
//! really runs, so tests can count executions across processes.

use std::io::Write;

use serde_json::Value;

use crate::kind::{InputDecl, ParamDecl, ParamType, Params, Resource, Stage, StageContext, StageError};

/// The test kinds.
pub fn kinds() -> Vec<Box<dyn Stage>> {
    vec![
        Box::new(Echo {
            kind: "test-echo",
            version: echo_version(),
        }),
        Box::new(Strict),
    ]
}

/// `test-strict`: a required parameter and a required input, for error-message tests.
pub struct Strict;

const STRICT_PARAMS: &[ParamDecl] = &[ParamDecl::required(
    "count",
    ParamType::Int,
    "how many (required)",
)];

const STRICT_INPUTS: &[InputDecl] = &[InputDecl {
    name: "source",
    required: true,
    doc: "an upstream test stage",
}];

impl Stage for Strict {
    fn kind(&self) -> &'static str {
        "test-strict"
    }
    fn impl_version(&self) -> u32 {
        1
    }
    fn summary(&self) -> &'static str {
        "test kind: a required parameter and input"
    }
    fn params(&self) -> &'static [ParamDecl] {
        STRICT_PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        STRICT_INPUTS
    }
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let count = ctx.params().int("count")?;
        ctx.metric("count", count as f64);
        Ok(())
    }
}

fn echo_version() -> u32 {
    std::env::var("ASYMFLOW_TEST_ECHO_VERSION")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// See the module docs.
pub struct Echo {
    kind: &'static str,
    version: u32,
}

const PARAMS: &[ParamDecl] = &[
    ParamDecl::optional(
        "value",
        ParamType::Any,
        "0",
        "any value; a number enters the metric",
    ),
    ParamDecl::optional(
        "sleep_ms",
        ParamType::Int,
        "0",
        "sleep this long while running",
    ),
    ParamDecl::optional("fail", ParamType::Bool, "false", "fail on purpose"),
    ParamDecl::optional("device", ParamType::Bool, "false", "take a device slot"),
    ParamDecl::optional(
        "trace",
        ParamType::Path,
        "\"\"",
        "append a line here on every real run",
    ),
];

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "input",
        required: false,
        doc: "upstream test stages",
    },
    InputDecl {
        name: "other",
        required: false,
        doc: "more upstream test stages",
    },
];

impl Stage for Echo {
    fn kind(&self) -> &'static str {
        self.kind
    }
    fn impl_version(&self) -> u32 {
        self.version
    }
    fn summary(&self) -> &'static str {
        "test kind: echoes its value and its inputs' values"
    }
    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }
    fn resource(&self, params: &Params) -> Resource {
        if params.bool("device").unwrap_or(false) {
            Resource::Device
        } else {
            Resource::Cpu
        }
    }
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let params = ctx.params().clone();
        if let Some(trace) = params.opt_str("trace") {
            let path = ctx.resolve_path(trace);
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| StageError::io(&path, e))?;
            writeln!(
                file,
                "{} {}",
                ctx.stage_name(),
                params.get("value").unwrap_or(&Value::Null)
            )
            .map_err(|e| StageError::io(&path, e))?;
        }
        let sleep = params.int("sleep_ms")?.max(0) as u64;
        let clock = std::time::Instant::now();
        while clock.elapsed().as_millis() < sleep as u128 {
            ctx.check_cancelled()?;
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if params.bool("fail")? {
            return Err(StageError::Other("failed on purpose (fail = true)".into()));
        }
        let mut total = params.get("value").and_then(Value::as_f64).unwrap_or(0.0);
        let mut seen = Vec::new();
        for slot in ["input", "other"] {
            for up in ctx.input_all(slot) {
                total += up.metrics.get("value").copied().unwrap_or(0.0);
                let text = std::fs::read_to_string(up.output("value.json")?).map_err(|e| {
                    StageError::io(
                        up.output("value.json").unwrap_or(std::path::Path::new("?")),
                        e,
                    )
                })?;
                seen.push(serde_json::from_str::<Value>(&text).unwrap_or(Value::Null));
            }
        }
        ctx.write_json(
            "value.json",
            &serde_json::json!({ "value": params.get("value"), "inputs": seen }),
        )?;
        ctx.metric("value", total);
        ctx.log(format!("echo total {total}"));
        Ok(())
    }
}

//! A stage's `timeout`: how long one of its jobs may run before it fails. It is an execution
//! setting, like where a job runs, so it lives in the stage's table beside `kind` (and in
//! templates), never in `params`: it does not enter the key, and raising it after a timeout
//! reruns the same key.
//!
//! ```toml
//! [stages.teacher]
//! kind = "train-teacher"
//! timeout = "2h30m"    # or "90m", "45s", "1.5h", "1d", or a number of seconds
//! ```

use std::time::Duration;

use super::error::SpecError;
use super::value::{SKind, SValue};

const UNITS: &[(char, f64)] = &[('d', 86_400.0), ('h', 3_600.0), ('m', 60.0), ('s', 1.0)];

const FORMAT: &str = "write a duration like \"90m\", \"2h\", \"1h30m\", \"45s\" or a number \
                      of seconds";

/// The duration a `timeout` value names (above zero).
pub(crate) fn parse_timeout(value: &SValue) -> Result<Duration, SpecError> {
    let seconds = match &value.kind {
        SKind::Int(n) => Some(*n as f64),
        SKind::Float(x) => Some(*x),
        SKind::Str(text) => seconds_of(text),
        _ => {
            return Err(SpecError::at(
                &value.loc,
                format!(
                    "`timeout` must be a duration, found a {}",
                    value.type_name()
                ),
            )
            .hint(FORMAT))
        }
    };
    match seconds {
        Some(s) if s.is_finite() && s > 0.0 && s < 1e12 => Ok(Duration::from_secs_f64(s)),
        Some(_) => Err(SpecError::at(&value.loc, "`timeout` must be above zero").hint(FORMAT)),
        None => Err(SpecError::at(&value.loc, "`timeout` is not a duration").hint(FORMAT)),
    }
}

/// Seconds in `90m`, `1h30m`, `2.5h`, `45s` or `45`; `None` when it is none of those.
fn seconds_of(text: &str) -> Option<f64> {
    let text = text.trim();
    if let Ok(plain) = text.parse::<f64>() {
        return Some(plain);
    }
    let mut total = 0.0;
    let mut number = String::new();
    let mut last_unit = f64::INFINITY;
    for c in text.chars() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let (_, scale) = UNITS.iter().find(|(u, _)| *u == c)?;
        // Units from large to small, each once: `1h30m`, never `30m1h`.
        if number.is_empty() || *scale >= last_unit {
            return None;
        }
        total += number.parse::<f64>().ok()? * scale;
        number.clear();
        last_unit = *scale;
    }
    (!text.is_empty() && number.is_empty()).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::seconds_of;

    #[test]
    fn durations_read_with_units_from_large_to_small() {
        assert_eq!(seconds_of("90m"), Some(5400.0));
        assert_eq!(seconds_of("1h30m"), Some(5400.0));
        assert_eq!(seconds_of("2.5s"), Some(2.5));
        assert_eq!(seconds_of("1d"), Some(86400.0));
        assert_eq!(seconds_of("45"), Some(45.0));
        for bad in ["", "m", "30m1h", "1h1h", "10 minutes", "5x", "1h30"] {
            assert_eq!(seconds_of(bad), None, "{bad:?}");
        }
    }
}

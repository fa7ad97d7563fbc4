//! AWS profile files for the S3 remote. `object_store` reads the `AWS_*` variables (and
//! instance metadata) but not `~/.aws/credentials` and `~/.aws/config`, which is where most
//! people keep their keys; this fills the gap for static keys and the region, following the
//! AWS CLI: `AWS_PROFILE` (else `default`), `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`.
//! A variable that is set always wins over a profile.
//!
//! It also says plainly when there are no credentials at all: an `AWS_PROFILE` that names no
//! profile is an error, and with no keys anywhere `object_store` falls back to the
//! instance-metadata service, whose refusal (a bare 403) would otherwise be all a user sees.

use std::collections::HashMap;
use std::path::PathBuf;

use object_store::aws::AmazonS3Builder;

/// Sections of an INI file: name -> key -> value.
type Ini = HashMap<String, HashMap<String, String>>;

fn parse_ini(text: &str) -> Ini {
    let mut out: Ini = HashMap::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            out.entry(section.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

fn file(var: &str, default: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".aws").join(default)))
}

/// Settings from the profile that the environment does not already give: (key, value) with
/// object_store's configuration names.
pub(crate) fn profile_settings(
    credentials: &str,
    config: &str,
    profile: &str,
    env_has: impl Fn(&str) -> bool,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let creds = parse_ini(credentials);
    if !env_has("AWS_ACCESS_KEY_ID") {
        if let Some(section) = creds.get(profile) {
            for (name, key) in [
                ("aws_access_key_id", "aws_access_key_id"),
                ("aws_secret_access_key", "aws_secret_access_key"),
                ("aws_session_token", "aws_session_token"),
            ] {
                if let Some(v) = section.get(name) {
                    out.push((key, v.clone()));
                }
            }
        }
    }
    if !env_has("AWS_REGION") && !env_has("AWS_DEFAULT_REGION") {
        let conf = parse_ini(config);
        let section = if profile == "default" {
            conf.get("default")
        } else {
            conf.get(&format!("profile {profile}"))
        };
        if let Some(region) = section.and_then(|s| s.get("region")) {
            out.push(("aws_region", region.clone()));
        }
    }
    out
}

/// Where the S3 keys come from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Found {
    /// The environment, a profile, or a token or container source `object_store` reads.
    Keys,
    /// Nowhere: `object_store` will ask the instance-metadata service.
    Nothing {
        /// The profile that was looked for.
        profile: String,
    },
}

impl Found {
    /// What to tell a user whose request was refused, when no keys were found.
    pub(crate) fn missing_note(&self) -> Option<String> {
        match self {
            Found::Keys => None,
            Found::Nothing { profile } => Some(format!(
                "no S3 credentials were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are unset and ~/.aws/credentials has no [{profile}] keys), so the instance-metadata service was asked instead; set the two variables, or AWS_PROFILE and ~/.aws/credentials"
            )),
        }
    }
}

/// Variables with which `object_store` finds credentials by itself (web identity, ECS).
const OTHER_SOURCES: [&str; 3] = [
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
];

/// Applies the profile's keys and region to `builder`, and says whether any keys were found.
/// An `AWS_PROFILE` naming a profile in neither file is an error saying so.
pub(crate) fn apply_profile(
    mut builder: AmazonS3Builder,
) -> Result<(AmazonS3Builder, Found), String> {
    let named = std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty());
    let profile = named.clone().unwrap_or_else(|| "default".into());
    let read = |p: Option<PathBuf>| p.and_then(|p| std::fs::read_to_string(p).ok());
    let credentials = read(file("AWS_SHARED_CREDENTIALS_FILE", "credentials")).unwrap_or_default();
    let config = read(file("AWS_CONFIG_FILE", "config")).unwrap_or_default();
    if let Some(name) = &named {
        check_profile_exists(&credentials, &config, name)?;
    }
    let env_has = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
    let settings = profile_settings(&credentials, &config, &profile, env_has);
    let keys = env_has("AWS_ACCESS_KEY_ID")
        || settings.iter().any(|(k, _)| *k == "aws_access_key_id")
        || OTHER_SOURCES.iter().any(|v| env_has(v));
    for (key, value) in settings {
        if let Ok(key) = key.parse() {
            builder = builder.with_config(key, value);
        }
    }
    let found = if keys {
        Found::Keys
    } else {
        Found::Nothing { profile }
    };
    Ok((builder, found))
}

/// An error unless `name` is a profile of the credentials or the config file.
fn check_profile_exists(credentials: &str, config: &str, name: &str) -> Result<(), String> {
    let creds = parse_ini(credentials);
    let conf = parse_ini(config);
    let in_config = |n: &str| {
        conf.contains_key(&format!("profile {n}")) || (n == "default" && conf.contains_key(n))
    };
    if creds.contains_key(name) || in_config(name) {
        return Ok(());
    }
    let mut known: Vec<String> = creds
        .keys()
        .cloned()
        .chain(
            conf.keys()
                .map(|k| k.trim_start_matches("profile ").to_string()),
        )
        .filter(|k| !k.is_empty())
        .collect();
    known.sort();
    known.dedup();
    Err(format!(
        "AWS_PROFILE={name} names no profile in ~/.aws/credentials or ~/.aws/config ({}); fix AWS_PROFILE or add a [{name}] section with aws_access_key_id and aws_secret_access_key",
        if known.is_empty() {
            "they define none".to_string()
        } else {
            format!("profiles there: {}", known.join(", "))
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDS: &str = "[default]\naws_access_key_id = AK\naws_secret_access_key = SK\n\n[team]\naws_access_key_id=TK\naws_secret_access_key=TS\n";
    const CONFIG: &str = "[default]\nregion = eu-west-1\n[profile team]\nregion=us-east-2\n";

    #[test]
    fn the_named_profile_gives_keys_and_region_unless_the_environment_does() {
        let got = profile_settings(CREDS, CONFIG, "team", |_| false);
        assert!(got.contains(&("aws_access_key_id", "TK".into())));
        assert!(got.contains(&("aws_region", "us-east-2".into())));
        let got = profile_settings(CREDS, CONFIG, "default", |v| v == "AWS_ACCESS_KEY_ID");
        assert_eq!(got, vec![("aws_region", "eu-west-1".to_string())]);
    }

    #[test]
    fn an_unknown_profile_is_named_with_the_ones_there_are() {
        assert!(check_profile_exists(CREDS, CONFIG, "team").is_ok());
        assert!(check_profile_exists("", CONFIG, "team").is_ok());
        let err = check_profile_exists(CREDS, CONFIG, "tema").unwrap_err();
        assert!(err.contains("AWS_PROFILE=tema names no profile"), "{err}");
        assert!(err.contains("profiles there: default, team"), "{err}");
    }
}

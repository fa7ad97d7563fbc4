//! AWS profile files for the S3 remote. `object_store` reads the `AWS_*` variables (and
//! instance metadata) but not `~/.aws/credentials` and `~/.aws/config`, which is where most
//! people keep their keys; this fills the gap for static keys and the region, following the
//! AWS CLI: `AWS_PROFILE` (else `default`), `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`.
//! A variable that is set always wins over a profile.

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

/// Applies the profile's keys and region to `builder`.
pub(crate) fn apply_profile(mut builder: AmazonS3Builder) -> AmazonS3Builder {
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let read = |p: Option<PathBuf>| p.and_then(|p| std::fs::read_to_string(p).ok());
    let credentials = read(file("AWS_SHARED_CREDENTIALS_FILE", "credentials")).unwrap_or_default();
    let config = read(file("AWS_CONFIG_FILE", "config")).unwrap_or_default();
    for (key, value) in profile_settings(&credentials, &config, &profile, |v| {
        std::env::var_os(v).is_some()
    }) {
        if let Ok(key) = key.parse() {
            builder = builder.with_config(key, value);
        }
    }
    builder
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
}

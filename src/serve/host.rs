//! The `Host` check that stops DNS rebinding.
//!
//! A web page the user visits can point a domain it controls at 127.0.0.1 once the browser has
//! loaded it; its script then talks to the dashboard "same-origin" and reads every result. The
//! browser still sends the attacker's domain in the `Host` header, so the dashboard answers
//! only requests naming it the way a user does: a loopback name (`localhost`, `127.0.0.1`,
//! `[::1]`), the address given to `--host`, or a name given to `--allow-host`, each with the
//! port the server listens on or without a port. Everything else gets a 403 that says what
//! was refused and how to allow a name on purpose.

use std::net::{IpAddr, SocketAddr};

/// The `Host` values the dashboard answers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostCheck {
    /// Lower-case host names and address literals (IPv6 in brackets).
    names: Vec<String>,
    /// The port the server is bound to.
    port: u16,
}

impl HostCheck {
    /// The loopback names, `bound`'s address and `extra` names, on `bound`'s port.
    pub fn new(bound: SocketAddr, extra: &[String]) -> HostCheck {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        names.push(literal(bound.ip()));
        names.extend(extra.iter().map(|n| normalise(n)));
        names.dedup();
        HostCheck {
            names,
            port: bound.port(),
        }
    }

    /// Whether a request with this `Host` header (`None`: without one) is answered.
    pub(crate) fn allows(&self, host: Option<&str>) -> bool {
        let Some(host) = host else { return false };
        let (name, port) = split(host);
        let port_ok = match port {
            None => true,
            Some(p) => p.parse::<u16>().is_ok_and(|p| p == self.port),
        };
        port_ok && self.names.contains(&normalise(name))
    }

    /// What a refused request is told.
    pub fn explain(&self, host: Option<&str>) -> String {
        let names: Vec<String> = self
            .names
            .iter()
            .map(|n| format!("{n}:{}", self.port))
            .collect();
        format!(
            "asymflow serve answers only requests addressed to {} (the Host header of this one \
             was {}). This protects the dashboard from web pages that point their own domain \
             at this machine (DNS rebinding). To reach it under another name on purpose, \
             start it with --allow-host NAME.\n",
            names.join(", "),
            match host {
                Some(h) => format!("`{}`", h.escape_default()),
                None => "missing".to_string(),
            }
        )
    }
}

/// An address as it appears in a `Host` header.
fn literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Lower case, without a trailing dot (`LOCALHOST.` is `localhost`).
fn normalise(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// `name[:port]`, with IPv6 literals in brackets.
fn split(host: &str) -> (&str, Option<&str>) {
    let host = host.trim();
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => {
                let (name, rest) = host.split_at(end + 1);
                (name, rest.strip_prefix(':'))
            }
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_the_bound_address_pass_on_the_bound_port() {
        let check = HostCheck::new("127.0.0.1:8765".parse().unwrap(), &[]);
        for ok in [
            "localhost:8765",
            "LOCALHOST:8765",
            "localhost.:8765",
            "127.0.0.1:8765",
            "[::1]:8765",
            "localhost",
        ] {
            assert!(check.allows(Some(ok)), "{ok}");
        }
        for bad in [
            "evil.example:8765",
            "localhost.evil.example:8765",
            "localhost:9999",
            "127.0.0.2:8765",
            "[::1]",
            "",
            "localhost:",
        ] {
            let expect = bad == "[::1]";
            assert_eq!(check.allows(Some(bad)), expect, "{bad}");
        }
        assert!(!check.allows(None));
        let text = check.explain(Some("evil.example:8765\r\n"));
        assert!(text.contains("`evil.example:8765\\r\\n`"), "{text}");
        assert!(text.contains("--allow-host"), "{text}");
    }

    #[test]
    fn the_host_value_and_allowed_names_pass_too() {
        let check = HostCheck::new(
            "[fe80::1]:80".parse().unwrap(),
            &["Lab-Server.local".to_string()],
        );
        assert!(check.allows(Some("[fe80::1]:80")));
        assert!(check.allows(Some("lab-server.local:80")));
        assert!(!check.allows(Some("lab-server.local:81")));
        let check = HostCheck::new("192.168.1.5:8765".parse().unwrap(), &[]);
        assert!(check.allows(Some("192.168.1.5:8765")));
        assert!(!check.allows(Some("rebind.example:8765")));
    }
}

//! `asymflow serve` over HTTP: every route, escaping of names from pipeline files, path
//! traversal, 404 pages, a thousand-row table, and live updates while `asymflow run` works on
//! the same cache in another process. The server is the real binary on a free port; requests
//! are plain HTTP/1.1 over a socket, so nothing here depends on an HTTP client crate.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::Project;

/// A running `asymflow serve`, stopped when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Server {
    /// Starts `asymflow serve --port 0` in `project` and waits for its URL.
    pub fn start(project: &Project, extra: &[&str]) -> Server {
        let mut args = vec!["serve", "--port", "0"];
        args.extend_from_slice(extra);
        let mut child = project
            .cmd(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("asymflow serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("reads the URL line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .map(str::to_string);
        let Some(addr) = addr else {
            let _ = child.kill();
            let mut err = String::new();
            let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            panic!("no URL from asymflow serve: {line:?}\n{err}");
        };
        Server { child, addr }
    }

    /// GET `path`.
    pub fn get(&self, path: &str) -> Response {
        request(&self.addr, "GET", path, None)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header name (lower case) -> value.
    pub headers: BTreeMap<String, String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// A header.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

/// One HTTP/1.1 request with `Connection: close`; `body` is sent as JSON.
pub fn request(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Response {
    request_to(addr, Some(addr), method, path, body)
}

/// [`request`] with the `Host` header `host` (none when `None`).
pub fn request_to(
    addr: &str,
    host: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if let Some(host) = host {
        head.push_str(&format!("Host: {host}\r\n"));
    }
    head.push_str("Connection: close\r\nAccept: */*\r\n");
    if body.is_some() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            payload.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(payload.as_bytes()).unwrap();
    // Read the header block, then exactly Content-Length bytes when given (a server may keep
    // the connection open despite `Connection: close`), else to the end.
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    let split = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut buf).expect("reads the response");
        assert!(n > 0, "connection closed before the headers: {raw:?}");
        raw.extend_from_slice(&buf[..n]);
    };
    let length = String::from_utf8_lossy(&raw[..split])
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    match length {
        Some(len) => {
            while raw.len() < split + 4 + len {
                let n = stream.read(&mut buf).expect("reads the body");
                assert!(n > 0, "connection closed inside the body");
                raw.extend_from_slice(&buf[..n]);
            }
        }
        None => {
            stream.read_to_end(&mut raw).expect("reads the body");
        }
    }
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    if headers
        .get("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..end])
                .split(';')
                .next()
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 2 + size + 2..];
    }
}

/// A sweep of `test-train` over `lambda_t` and `seed`, with a report whose table is drawn as a
/// heat map, as a pipeline file.
pub const SWEEP: &str = r#"
[pipeline]
name = "sweep"

[sweep]
seed = [0, 1, 2]
lambda_t = [0.5, 0.7]

[stages.source]
kind = "test-echo"
params = { value = 1 }

[stages.train]
kind = "test-train"
inputs = { input = "source" }
params = { value = "${sweep.lambda_t}", seed = "${sweep.seed}", epochs = 4 }

[stages.table]
kind = "report"
inputs = { results = ["train"] }
params = { rows = "stage", cols = "lambda_t", metrics = ["map"], over = "seed", heatmap = true, plot_xy = [] }
"#;

/// A project with [`SWEEP`] run for seeds 0 and 1 only (seed 2 is left to run, so grouped
/// cells are partial).
pub fn sweep_project() -> Project {
    let project = Project::new();
    project.write("pipelines/sweep.toml", SWEEP);
    project.run_json("pipelines/sweep.toml", &["--sweep", "seed=0,1"]);
    project
}

/// The plan index of the instance whose label is `label`, from the status API.
pub fn instance_id(server: &Server, pipeline: &str, label: &str) -> usize {
    let status = server.get(&format!("/api/p/{pipeline}/status")).json();
    status["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == label)
        .unwrap_or_else(|| panic!("no instance {label} in {status}"))["id"]
        .as_u64()
        .unwrap() as usize
}

#[test]
fn every_route_answers_from_the_cache() {
    let project = sweep_project();
    let server = Server::start(&project, &[]);

    let home = server.get("/");
    assert_eq!(home.status, 200);
    let text = home.text();
    assert!(text.contains("href=\"/p/sweep\""), "{text}");
    // 1 source + 4 train (seeds 0, 1) cached; 2 train (seed 2) + the report to run.
    assert!(
        text.contains("<td class=\"num cached\">5</td><td class=\"num to-run\">3</td>"),
        "{text}"
    );
    assert!(home
        .header("content-security-policy")
        .contains("script-src 'self'"));

    let page = server.get("/p/sweep");
    assert_eq!(page.status, 200);
    let text = page.text();
    assert_eq!(
        text.matches("<tr data-id=").count(),
        8,
        "one row per instance"
    );
    for column in [
        "seed",
        "lambda_t",
        "map",
        "final_loss",
        "status",
        "progress",
    ] {
        assert!(
            text.contains(&format!("class=\"sort\">{column}</button>")),
            "column {column}"
        );
    }
    assert!(text.contains("<svg class=\"dag\""));
    assert!(text.contains("<g class=\"node st-to-run\" data-stage=\"1\" data-name=\"train\""));
    assert!(text.contains("4/6 cached"), "train node counts");
    assert!(text.contains("data-live=\"/api/p/sweep/status\""));

    let grouped = server.get("/p/sweep?over=seed").text();
    // map = 0.8 * lambda_t + seed / 100: seeds 0 and 1 of 3 -> 0.405 ± 0.0071 (2/3).
    assert!(grouped.contains("0.4050 ± 0.0071 (2/3)"), "{grouped}");
    assert!(grouped.contains("0.5650 ± 0.0071 (2/3)"), "{grouped}");
    assert!(grouped.contains("class=\"metric num partial\""));

    let id = instance_id(&server, "sweep", "train[lambda_t=0.7,seed=1]");
    let inst = server.get(&format!("/p/sweep/i/{id}"));
    assert_eq!(inst.status, 200);
    let text = inst.text();
    for part in [
        "<h2>Why would this rerun</h2>",
        "It would not",
        "<h2>Parameters</h2>",
        "<h2>Inputs</h2>",
        "href=\"/p/sweep/i/0\">source</a>",
        "<h2>Outputs</h2>",
        "loss.json",
        "<h2>Metrics</h2>",
        "data-metric=\"map\">0.57</span>",
        "<h2>Provenance and telemetry</h2>",
        "IMPL_VERSION",
        "epoch 4/4: loss",
        "id=\"loss-data\"",
        "class=\"chart\"",
    ] {
        assert!(text.contains(part), "instance page lacks {part}:\n{text}");
    }

    let log = server.get(&format!("/p/sweep/i/{id}/log"));
    assert_eq!(log.status, 200);
    assert!(log.header("content-type").starts_with("text/plain"));
    assert_eq!(log.text().lines().count(), 4);

    let loss = server.get(&format!("/p/sweep/i/{id}/out/loss.json"));
    assert_eq!(loss.status, 200);
    assert!(loss.header("content-disposition").contains("loss.json"));
    let curve = loss.json();
    assert_eq!(curve.as_array().unwrap().len(), 4);
    let expected = 1.7 * (-2.0f64).exp();
    assert!((curve[3]["loss"].as_f64().unwrap() - expected).abs() < 1e-12);

    let api = server.get(&format!("/api/p/sweep/i/{id}")).json();
    assert_eq!(api["status"], "cached");
    assert!(api["log"].as_str().unwrap().contains("epoch 1/4"));

    let digest = {
        let at = text.find("<code title=\"").unwrap() + 13;
        text[at..at + 64].to_string()
    };
    let object = server.get(&format!("/objects/{digest}?name=x.txt"));
    assert_eq!(object.status, 200);
    assert_eq!(
        blake3::hash(&object.body).to_hex().as_str(),
        digest,
        "the object's bytes"
    );

    let other = instance_id(&server, "sweep", "train[lambda_t=0.5,seed=1]");
    let compare = server.get(&format!("/p/sweep/compare?ids={id},{other}"));
    assert_eq!(compare.status, 200);
    let text = compare.text();
    assert!(
        text.contains("train[lambda_t=0.7,seed=1]") && text.contains("train[lambda_t=0.5,seed=1]")
    );
    assert!(
        text.contains("<tr class=\"param diff\"><th>value</th>"),
        "{text}"
    );
    assert!(text.contains("<tr class=\"param\"><th>seed</th>"), "{text}");
    assert!(text.contains("class=\"delta down\">-0.16</span>"), "{text}");

    let reports = server.get("/p/sweep/reports");
    assert_eq!(reports.status, 200);
    let text = reports.text();
    assert!(text.contains("<table class=\"heat\">"), "{text}");
    assert!(
        text.contains("title=\"train × 0.7: 56.5\" data-value=\"0.565\""),
        "heat map cells tell their values on hover:\n{text}"
    );

    let status = server.get("/api/p/sweep/status").json();
    assert_eq!(status["counts"]["cached"], 5);
    assert_eq!(status["counts"]["to_run"], 3);

    for (asset, ty) in [("app.js", "text/javascript"), ("app.css", "text/css")] {
        let r = server.get(&format!("/assets/{asset}"));
        assert_eq!(r.status, 200);
        assert!(r.header("content-type").starts_with(ty));
    }
}

#[test]
fn names_from_pipeline_files_render_as_text() {
    let project = Project::new();
    project.write(
        "pipelines/evil.toml",
        r#"
[pipeline]
name = "evil"

[sweep]
tag = ["<img src=x onerror=alert(2)>", "plain"]

[stages.first]
kind = "test-echo"
params = { value = "${sweep.tag}" }

[stages.after]
kind = "test-echo"
inputs = { input = "first" }
params = { value = "<script>alert(1)</script><b>evil</b>" }
"#,
    );
    project.run_json("pipelines/evil.toml", &[]);
    let server = Server::start(&project, &[]);
    for path in [
        "/",
        "/p/evil",
        "/p/evil?over=tag",
        "/p/evil/i/0",
        "/p/evil/i/2",
        "/p/evil/compare?ids=0,1",
        "/p/evil/reports",
        "/p/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    ] {
        let r = server.get(path);
        let text = r.text();
        assert!(r.status == 200 || r.status == 404, "{path}: {}", r.status);
        assert!(
            !text.contains("<script>alert"),
            "{path} renders markup:\n{text}"
        );
        assert!(
            !text.contains("<img src=x"),
            "{path} renders markup:\n{text}"
        );
        assert!(!text.contains("<b>evil"), "{path} renders markup:\n{text}");
    }
    // Names are safe by construction (the spec refuses markup in pipeline and stage names);
    // sweep values and parameter values can hold anything, and render as text.
    let page = server.get("/p/evil").text();
    assert!(
        page.contains("&lt;img src=x onerror=alert(2)&gt;"),
        "{page}"
    );
    let after = server.get("/p/evil/i/2").text() + &server.get("/p/evil/i/3").text();
    assert!(
        after.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{after}"
    );
}

#[test]
fn no_url_reads_outside_the_cache() {
    let project = sweep_project();
    project.write("secret.txt", "project secret");
    std::fs::write(
        project.path().join("cache").join("secret.txt"),
        "cache secret",
    )
    .unwrap();
    let server = Server::start(&project, &[]);
    let id = instance_id(&server, "sweep", "train[lambda_t=0.5,seed=0]");
    let attempts = [
        "/objects/../../secret.txt".to_string(),
        "/objects/..%2F..%2Fsecret.txt".into(),
        "/objects/%2Fetc%2Fpasswd".into(),
        format!("/objects/{}", "../".repeat(21) + "s"),
        "/objects/..%2Fsecret.txt".into(),
        "/objects/..%2Findex.sqlite".into(),
        format!("/p/sweep/i/{id}/out/..%2F..%2Fsecret.txt"),
        format!("/p/sweep/i/{id}/out/..%2F..%2F..%2Fsecret.txt"),
        format!("/p/sweep/i/{id}/out/%2Fetc%2Fpasswd"),
        format!("/p/sweep/i/..%2F{id}/log"),
        "/p/..%2Fsecret/i/0/log".into(),
        "/p/..%2F..%2F..%2Fetc%2Fpasswd".into(),
        "/p/..%2Fpipelines%2Fsweep".into(),
        "/assets/..%2F..%2FCargo.toml".into(),
        "/assets/../../Cargo.toml".into(),
        "/../../../../etc/passwd".into(),
        "/p/sweep/i/0/log/../../../../secret.txt".into(),
        "/p/%FF%FE/i/0/log".into(),
        "/objects/%C0%AE%C0%AE%2Fsecret.txt".into(),
    ];
    for path in attempts {
        let r = server.get(&path);
        let text = r.text();
        assert_eq!(r.status, 404, "{path}: {text}");
        for leak in ["secret", "root:", "SQLite format", "[package]"] {
            assert!(
                !text.contains(leak) || text.contains("Not found"),
                "{path} leaks {leak}"
            );
        }
        assert!(!text.contains("project secret") && !text.contains("cache secret"));
    }
}

#[test]
fn unknown_routes_and_bad_ids_get_a_helpful_404() {
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    for (path, hint) in [
        ("/nope", "no page at this address"),
        ("/p/nope", "no pipeline `nope`"),
        ("/p/sweep/i/999", "instances are numbered 0 to 7"),
        ("/p/sweep/i/abc", "has no instance `abc`"),
        ("/p/sweep/i/-1", "has no instance `-1`"),
        ("/p/sweep/i/999/log", "has no instance"),
        ("/api/p/sweep/i/999", "has no instance"),
        ("/api/p/nope/status", "no pipeline `nope`"),
        ("/p/sweep/i/0/out/nope.bin", "has no output `nope.bin`"),
        ("/p/sweep/i/7/out/table.md", "is not cached"),
        ("/p/sweep/compare?ids=0", "two or more instances"),
        ("/p/sweep/compare", "two or more instances"),
        ("/p/sweep?over=nope", "no sweep axis `nope`"),
        ("/objects/zzz", "not an object digest"),
        (
            &format!("/objects/{}", "a".repeat(64)),
            "is not in the cache",
        ),
        ("/assets/nope.js", "no asset"),
    ] {
        let r = server.get(path);
        assert_eq!(r.status, 404, "{path}: {}", r.text());
        let text = r.text();
        assert!(text.contains("<title>Not found"), "{path}: {text}");
        assert!(text.contains(&html_escape(hint)), "{path}: {text}");
        assert!(text.contains("<a href=\"/\">list of pipelines</a>"));
    }
}

/// `text` as the pages escape it.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[test]
fn a_broken_pipeline_file_shows_its_error() {
    let project = sweep_project();
    project.write(
        "pipelines/broken.toml",
        "[stages.a]\nkind = \"no-such-kind\"\n",
    );
    let server = Server::start(&project, &[]);
    let home = server.get("/").text();
    assert!(home.contains("no-such-kind"), "{home}");
    assert!(
        home.contains("href=\"/p/sweep\""),
        "the other pipelines still list"
    );
    let page = server.get("/p/broken");
    assert_eq!(page.status, 422);
    assert!(page.text().contains("no-such-kind"));
}

#[test]
fn a_project_without_a_cache_is_served_without_creating_one() {
    let project = Project::new();
    project.write("pipelines/sweep.toml", SWEEP);
    let server = Server::start(&project, &[]);
    let page = server.get("/p/sweep");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.text().matches("st-to-run\" data-v=\"to-run\"").count(),
        8
    );
    assert!(server
        .get("/p/sweep/i/1")
        .text()
        .contains("the cache is empty"));
    assert!(
        !project.path().join("cache").exists(),
        "serve wrote a cache"
    );
}

#[test]
fn a_non_loopback_host_is_warned_about() {
    let project = Project::new();
    let mut child = project
        .cmd(&["serve", "--host", "0.0.0.0", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut err)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(err.starts_with("warning: serving on 0.0.0.0"), "{err}");
}

/// Issue 29, item 11: a page that points its own domain at 127.0.0.1 (DNS rebinding) sends
/// that domain as `Host`; the dashboard refuses it, and answers loopback names, the served
/// address and names allowed with --allow-host.
#[test]
fn requests_for_another_host_name_are_refused() {
    let project = sweep_project();
    let server = Server::start(&project, &["--allow-host", "lab-box.example"]);
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let get = |host: Option<&str>, path: &str| request_to(&server.addr, host, "GET", path, None);
    for host in [
        format!("rebind.attacker.example:{port}"),
        format!("localhost.attacker.example:{port}"),
        format!("localhost:{}", port.parse::<u32>().unwrap() + 1),
        "attacker.example".to_string(),
    ] {
        for path in [
            "/",
            "/p/sweep",
            "/api/p/sweep/status",
            "/assets/app.js",
            "/nowhere",
        ] {
            let r = get(Some(&host), path);
            assert_eq!(r.status, 403, "{host} {path}: {}", r.text());
            assert!(r.text().contains("DNS rebinding"), "{}", r.text());
            assert!(!r.text().contains("<html"), "{}", r.text());
        }
    }
    let r = get(None, "/");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("was missing"), "{}", r.text());
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("LocalHost:{port}"),
        format!("lab-box.example:{port}"),
        "localhost".to_string(),
    ] {
        let r = get(Some(&host), "/api/p/sweep/status");
        assert_eq!(r.status, 200, "{host}: {}", r.text());
    }
}

/// Issue 29, item 12: an instance whose log object is corrupt keeps its page (the log shown
/// as corrupt, the outputs table marking it, metrics still there), its live updates keep
/// answering, and the raw log route says what is wrong.
#[test]
fn a_corrupt_log_is_shown_as_corrupt_and_the_page_stays() {
    use asymflow::cache::Cache;
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    let id = instance_id(&server, "sweep", "train[lambda_t=0.5,seed=0]");
    let page = server.get(&format!("/p/sweep/i/{id}")).text();
    let row = page
        .split("<tr><td>log.txt</td>")
        .nth(1)
        .unwrap_or_else(|| panic!("no log row:\n{page}"));
    let digest = row
        .split("<code title=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let cache = Cache::new(&project.path().join("cache"));
    let path = cache.objects().local_path(&digest).expect("the log object");
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).unwrap();
    std::fs::write(&path, "epoch 1 loss 0.1\nflipped bits\n").unwrap();

    let page = server.get(&format!("/p/sweep/i/{id}"));
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(
        text.contains("class=\"log error\">The log cannot be shown: object"),
        "{text}"
    );
    assert!(
        text.contains(&format!("object {digest} is corrupt")),
        "{text}"
    );
    assert!(text.contains(">corrupt</span>"), "{text}");
    assert!(!text.contains("flipped bits"), "{text}");
    assert!(text.contains("data-metric=\"map\""), "{text}");
    assert!(text.contains("data-live="), "{text}");

    let live = server.get(&format!("/api/p/sweep/i/{id}"));
    assert_eq!(live.status, 200, "{}", live.text());
    let doc = live.json();
    assert_eq!(doc["status"], "cached", "{doc}");
    assert!(doc["log"].is_null(), "{doc}");
    assert!(
        doc["log_error"].as_str().unwrap().contains("is corrupt"),
        "{doc}"
    );

    let raw = server.get(&format!("/p/sweep/i/{id}/log"));
    assert_eq!(raw.status, 500);
    assert!(raw.text().contains("cache verify"), "{}", raw.text());
    // Nothing was quarantined or repaired by the dashboard.
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "epoch 1 loss 0.1\nflipped bits\n"
    );
}

/// A thousand instances: the page sends the first page of rows (issue 35: a pipeline page
/// must render fast however many instances it has), and `?per=1000` all of them.
#[test]
fn a_thousand_instances_render_one_page_at_a_time() {
    let project = Project::new();
    let values: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    project.write(
        "pipelines/big.toml",
        &format!(
            "[sweep]\nx = [{}]\n\n[stages.many]\nkind = \"test-echo\"\nparams = {{ value = \"${{sweep.x}}\" }}\n",
            values.join(", ")
        ),
    );
    project.run_json("pipelines/big.toml", &[]);
    let server = Server::start(&project, &[]);
    let clock = Instant::now();
    let page = server.get("/p/big");
    let took = clock.elapsed();
    assert_eq!(page.status, 200);
    let text = page.text();
    assert_eq!(text.matches("<tr data-id=").count(), 200);
    assert!(text.contains("1000 rows</span>, showing 1-200"), "{text}");
    assert!(text.contains("page 1 of 5"));
    let all = server.get("/p/big?per=1000").text();
    assert_eq!(all.matches("<tr data-id=").count(), 1000);
    assert_eq!(all.matches("data-v=\"cached\"").count(), 1000);
    let page5 = server.get("/p/big?page=5&sort=x&dir=desc").text();
    assert!(
        page5.contains("<tr data-id=\"0\">"),
        "the smallest x is last when descending"
    );
    eprintln!(
        "serve: 1,000-instance pipeline page ({} kB) built and sent in {:.0} ms",
        text.len() / 1000,
        took.as_secs_f64() * 1000.0
    );
}

#[test]
fn the_pipeline_page_follows_a_run_in_another_process() {
    let project = Project::new();
    project.write(
        "pipelines/live.toml",
        r#"
[sweep]
seed = [0, 1]

[stages.train]
kind = "test-train"
params = { seed = "${sweep.seed}", epochs = 6, sleep_ms = 250 }
"#,
    );
    // The cache exists before the run starts, as it does for a user watching a re-run.
    project.write("pipelines/warm.toml", "[stages.w]\nkind = \"test-echo\"\n");
    project.run_json("pipelines/warm.toml", &[]);
    let server = Server::start(&project, &[]);
    let before = server.get("/api/p/live/status").json();
    assert_eq!(before["counts"]["to_run"], 2);

    let mut run = project
        .cmd(&["run", "pipelines/live.toml", "-j", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut positions = Vec::new();
    let mut saw_running_log = false;
    let mut saw_stage_running = false;
    loop {
        assert!(Instant::now() < deadline, "the run did not finish in 60 s");
        let status = server.get("/api/p/live/status").json();
        for inst in status["instances"].as_array().unwrap() {
            if inst["status"] == "running" {
                if let Some(pos) = inst["progress"]["pos"].as_u64() {
                    assert_eq!(inst["progress"]["len"], 6);
                    assert_eq!(inst["progress"]["unit"], "epochs");
                    if positions.last() != Some(&pos) {
                        positions.push(pos);
                    }
                }
                let id = inst["id"].as_u64().unwrap();
                let live = server.get(&format!("/api/p/live/i/{id}")).json();
                if live["log"]
                    .as_str()
                    .is_some_and(|l| l.contains("epoch 1/6"))
                {
                    saw_running_log = true;
                }
            }
        }
        if status["stages"][0]["status"] == "running" {
            saw_stage_running = true;
        }
        if status["counts"]["cached"] == 2 {
            for inst in status["instances"].as_array().unwrap() {
                assert!(inst["metrics"]["map"].is_number(), "{inst}");
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(run.wait().unwrap().success());
    assert!(saw_stage_running, "the graph's node turned running");
    assert!(
        positions.len() >= 3,
        "progress moved while running: {positions:?}"
    );
    assert!(saw_running_log, "the log was readable while the stage ran");
    let page = server.get("/p/live").text();
    assert_eq!(page.matches("data-v=\"cached\"").count(), 2);
}

/// A pipeline's state is kept between requests (issue 35: a page of a 100,000-instance sweep
/// must not plan the sweep again), and computed again as soon as anything it rests on
/// changes: the pipeline file, or an object removed from the store by hand.
#[test]
fn a_kept_state_is_dropped_when_the_pipeline_or_the_store_changes() {
    let project = Project::new();
    project.write(
        "pipelines/kept.toml",
        "[sweep]\nx = [1, 2]\n\n[stages.e]\nkind = \"test-echo\"\nparams = { value = \"${sweep.x}\" }\n",
    );
    project.run_json("pipelines/kept.toml", &[]);
    let server = Server::start(&project, &[]);
    let counts = |server: &Server| server.get("/api/p/kept/status").json()["counts"].clone();
    assert_eq!(counts(&server)["cached"], 2);
    assert_eq!(counts(&server)["cached"], 2, "served again, unchanged");

    project.write(
        "pipelines/kept.toml",
        "[sweep]\nx = [1, 2, 3]\n\n[stages.e]\nkind = \"test-echo\"\nparams = { value = \"${sweep.x}\" }\n",
    );
    let after_edit = counts(&server);
    assert_eq!(
        (after_edit["cached"].clone(), after_edit["to_run"].clone()),
        (2.into(), 1.into())
    );

    let objects = project.path().join("cache/objects");
    let shard = std::fs::read_dir(&objects)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().is_dir())
        .expect("a shard folder")
        .path();
    for object in std::fs::read_dir(&shard).unwrap().filter_map(Result::ok) {
        std::fs::remove_file(object.path()).unwrap();
    }
    let after_removal = counts(&server);
    assert!(
        after_removal["cached"].as_u64().unwrap() < 2,
        "an output removed from the store shows at once: {after_removal}"
    );
}

//! `asymflow serve` in a real browser: headless Chromium (Debian's `chromium` and
//! `chromium-driver`, installed and started by `scripts/services/chromium.sh up`) driven over
//! WebDriver. The test loads the pipeline page of a small cached sweep, sorts by a metric,
//! filters by a parameter, opens an instance and its loss chart, compares two instances, looks
//! at the report's heat map and switches to dark mode, asserting what the DOM shows at each
//! step and saving a screenshot of each under `target/tmp/serve-browser/`.
//!
//! The WebDriver client is the few W3C endpoints the test needs, as JSON over the same plain
//! HTTP helper the HTTP tests use.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::serve::{instance_id, request, sweep_project, Server};
use super::support::Project;

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Browser {
    driver: String,
    session: String,
    shots: std::path::PathBuf,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(driver_url: &str, chromium: &str) -> Browser {
        let driver = driver_url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        }}});
        let r = request(&driver, "POST", "/session", Some(&caps));
        let v = r.json();
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
            .to_string();
        let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-browser");
        std::fs::create_dir_all(&shots).unwrap();
        Browser {
            driver,
            session,
            shots,
            _profile: profile,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let r = request(
            &self.driver,
            method,
            &format!("/session/{}{path}", self.session),
            body.as_ref(),
        );
        let v = r.json();
        assert!(
            r.status == 200,
            "WebDriver {method} {path}: {} {v}",
            r.status
        );
        v["value"].clone()
    }

    fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
        self.wait("document.body && document.body.dataset.ready === '1'");
    }

    fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
    }

    fn wait(&self, condition: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if self.eval(&format!("return !!({condition});")) == json!(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {condition}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The element a script returns.
    fn element(&self, script: &str) -> String {
        let v = self.eval(script);
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element from {script}: {v}"))
            .to_string()
    }

    fn click(&self, element: &str) {
        self.call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    fn type_into(&self, element: &str, text: &str) {
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        );
    }

    fn hover(&self, element: &str, dx: i64) {
        let mut origin = serde_json::Map::new();
        origin.insert(ELEMENT.to_string(), json!(element));
        self.call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{
                "type": "pointer", "id": "mouse", "parameters": { "pointerType": "mouse" },
                "actions": [{ "type": "pointerMove", "duration": 0,
                              "origin": origin, "x": dx, "y": 0 }]
            }]})),
        );
    }

    fn screenshot(&self, name: &str) {
        let b64 = self.call("GET", "/screenshot", None);
        let png = base64_decode(b64.as_str().expect("base64 PNG"));
        assert_eq!(&png[1..4], b"PNG", "a PNG screenshot");
        std::fs::write(self.shots.join(name), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = request(
            &self.driver,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits: Vec<u32> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk.iter().fold(0u32, |acc, d| acc << 6 | d) << (6 * (4 - chunk.len()));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

/// The values of column `header` in the visible rows of the instance table (sort values).
fn column(browser: &Browser, header: &str) -> Vec<Value> {
    browser
        .eval(&format!(
            "const t = document.getElementById('instances');
         const c = [...t.tHead.rows[0].cells].findIndex(th => th.textContent === {header:?});
         return [...t.tBodies[0].rows].filter(r => !r.hidden)
           .map(r => r.cells[c].dataset.v === undefined ? null : Number(r.cells[c].dataset.v));"
        ))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The WebDriver URL and the browser, or `None` (with the one-line skip message).
fn chromium() -> Option<(String, String)> {
    match (
        std::env::var("ASYMFLOW_WEBDRIVER"),
        std::env::var("ASYMFLOW_CHROMIUM"),
    ) {
        (Ok(driver), Ok(chromium)) => Some((driver, chromium)),
        _ => {
            eprintln!(
                "skipped: chromium not available (run `eval \"$(scripts/services/chromium.sh up)\"`, which installs Debian's chromium and chromium-driver)"
            );
            None
        }
    }
}

#[test]
fn a_researcher_sorts_filters_and_opens_a_loss_chart_in_chromium() {
    let Some((driver, chromium)) = chromium() else {
        return;
    };
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    let browser = Browser::start(&driver, &chromium);
    let base = format!("http://{}", server.addr);

    browser.goto(&format!("{base}/p/sweep"));
    assert_eq!(
        browser.eval("return document.querySelectorAll('#instances tbody tr').length;"),
        json!(8)
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('svg.dag .node').length;"),
        json!(3)
    );
    browser.screenshot("1-pipeline.png");

    // Sort by mAP: ascending, then descending; rows without the metric stay last. The server
    // sorts, and the script swaps the table in.
    let map_button = "return [...document.querySelectorAll('#instances thead button.sort')].find(b => b.textContent === 'map');";
    browser.click(&browser.element(map_button));
    browser.wait("document.querySelector('#instances th[aria-sort=\"ascending\"]')");
    let values: Vec<f64> = column(&browser, "map")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(values.len(), 4, "four trained instances have mAP");
    assert!(
        values.windows(2).all(|w| w[0] <= w[1]),
        "ascending: {values:?}"
    );
    browser.click(&browser.element(map_button));
    browser.wait("document.querySelector('#instances th[aria-sort=\"descending\"]')");
    assert_eq!(
        browser.eval("return location.search;"),
        json!("?sort=map&dir=desc"),
        "the sort is in the URL"
    );
    let values: Vec<f64> = column(&browser, "map")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] >= w[1]),
        "descending: {values:?}"
    );
    assert!((values[0] - 0.57).abs() < 1e-9, "best first: {values:?}");
    assert_eq!(
        browser.eval("return document.querySelector('#instances th[aria-sort]').textContent;"),
        json!("map")
    );

    // Filter by the parameter lambda_t.
    let filter = browser.element(
        "const t = document.getElementById('instances');
         const c = [...t.tHead.rows[0].cells].findIndex(th => th.textContent === 'lambda_t');
         return t.querySelector(`input.filter[data-col=\"${c}\"]`);",
    );
    browser.type_into(&filter, "=0.7");
    browser.wait(
        "document.querySelector('.shown[data-for=\"instances\"]').textContent === '3 of 8 rows'",
    );
    let lambdas = column(&browser, "lambda_t");
    assert_eq!(lambdas, vec![json!(0.7); 3], "only lambda_t = 0.7 is shown");
    assert_eq!(
        browser
            .eval("return document.querySelector('.shown[data-for=\"instances\"]').textContent;"),
        json!("3 of 8 rows")
    );
    browser.screenshot("2-sorted-and-filtered.png");

    // Open the best instance and its loss chart.
    let link = browser.element(
        "return [...document.querySelectorAll('#instances tbody tr')].find(r => !r.hidden).querySelector('td.stage a');",
    );
    browser.click(&link);
    browser.wait("location.pathname.includes('/i/') && document.body.dataset.ready === '1'");
    assert_eq!(
        browser.eval("return document.querySelector('h1').textContent;"),
        json!("train[lambda_t=0.7,seed=1]")
    );
    assert_eq!(
        browser.eval("return [...document.querySelectorAll('#loss-chart .legend text')].map(t => t.textContent);"),
        json!(["loss", "aux"])
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('#loss-chart path.series').length;"),
        json!(2)
    );
    let chart = browser.element("return document.querySelector('#loss-chart svg');");
    browser.hover(&chart, 120);
    browser.wait("!document.querySelector('#loss-chart .tip').hidden");
    let tip = browser.eval("return document.querySelector('#loss-chart .tip').textContent;");
    assert!(
        tip.as_str().unwrap().starts_with("epoch ") && tip.as_str().unwrap().contains("loss: "),
        "tooltip: {tip}"
    );
    browser.screenshot("3-instance-loss-chart.png");
    let aux = browser
        .element("return document.querySelector('#loss-chart .legend g[data-name=\"aux\"]');");
    browser.click(&aux);
    assert_eq!(
        browser.eval("return document.querySelectorAll('#loss-chart path.series').length;"),
        json!(1),
        "a legend click hides a curve"
    );

    // Compare two instances.
    let a = instance_id(&server, "sweep", "train[lambda_t=0.5,seed=0]");
    let b = instance_id(&server, "sweep", "train[lambda_t=0.7,seed=0]");
    browser.goto(&format!("{base}/p/sweep"));
    for id in [a, b] {
        let pick = browser.element(&format!(
            "return document.querySelector('input.pick[value=\"{id}\"]');"
        ));
        browser.click(&pick);
    }
    let compare = browser.element("return document.getElementById('compare');");
    browser.click(&compare);
    browser.wait("location.pathname.endsWith('/compare') && document.body.dataset.ready === '1'");
    assert_eq!(
        browser.eval("return document.querySelectorAll('#compare-table thead th a').length;"),
        json!(2)
    );
    let only = browser.element("return document.getElementById('only-diff');");
    browser.click(&only);
    let shown = browser.eval(
        "return [...document.querySelectorAll('#compare-table tbody tr')]
           .filter(r => getComputedStyle(r).display !== 'none' && !r.classList.contains('group'))
           .map(r => r.querySelector('th').textContent);",
    );
    assert_eq!(
        shown,
        json!(["sweep lambda_t", "value", "final_loss", "map"])
    );
    browser.screenshot("4-compare.png");

    // The report's heat map: one coloured cell per lambda_t, each telling its value on hover.
    browser.goto(&format!("{base}/p/sweep/reports"));
    assert_eq!(
        browser
            .eval("return [...document.querySelectorAll('table.heat td.hv')].map(td => td.title);"),
        json!(["train × 0.5: 40.5", "train × 0.7: 56.5"])
    );
    browser.screenshot("5-reports.png");
    browser.goto(&format!("{base}/p/sweep/compare?ids={a},{b}"));

    // Dark mode.
    let theme = browser.element("return document.getElementById('theme');");
    browser.click(&theme);
    assert_eq!(
        browser.eval("return document.documentElement.dataset.theme;"),
        json!("dark")
    );
    assert_eq!(
        browser.eval("return getComputedStyle(document.body).backgroundColor;"),
        json!("rgb(18, 22, 29)")
    );
    browser.screenshot("6-compare-dark.png");
    eprintln!("screenshots in {}", browser.shots.display());
}

#[test]
fn the_open_pipeline_page_follows_a_run_in_chromium() {
    let Some((driver, chromium)) = chromium() else {
        return;
    };
    let project = Project::new();
    project.write(
        "pipelines/live.toml",
        "[stages.train]\nkind = \"test-train\"\nparams = { epochs = 8, sleep_ms = 600 }\n",
    );
    project.write("pipelines/warm.toml", "[stages.w]\nkind = \"test-echo\"\n");
    project.run_json("pipelines/warm.toml", &[]);
    let server = Server::start(&project, &[]);
    let browser = Browser::start(&driver, &chromium);
    browser.goto(&format!("http://{}/p/live", server.addr));
    assert_eq!(
        browser.eval("return document.querySelector('td[data-status-of=\"0\"]').textContent;"),
        json!("to-run")
    );
    let mut run = project
        .cmd(&["run", "pipelines/live.toml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The page, loaded before the run, turns the row and the graph's node to running and
    // shows the epochs advancing, then the result, without a reload.
    browser.wait("document.querySelector('td[data-status-of=\"0\"]').textContent === 'running'");
    browser.wait("document.querySelector('svg.dag .node').classList.contains('st-running')");
    browser.wait("/^[1-7]\\/8 epochs$/.test(document.querySelector('td[data-progress-of=\"0\"]').textContent)");
    browser.screenshot("7-live-running.png");
    browser.wait("document.querySelector('td[data-status-of=\"0\"]').textContent === 'cached'");
    assert!(run.wait().unwrap().success());
    // Issue 34: the page, opened before any result had a metric, gains the metric columns and
    // no longer says why the stage would run ("new"). Failed before the fix: no `map` column,
    // and "new" stayed.
    browser.wait("[...document.querySelectorAll('#instances thead button.sort')].some(b => b.textContent === 'map')");
    browser.wait("document.querySelector('td[data-why-of=\"0\"]').textContent === ''");
    assert_eq!(
        browser.eval("return document.querySelector('td[data-metric=\"map\"]').textContent;"),
        json!("0.4")
    );
    assert_eq!(
        browser.eval("return document.querySelector('[data-count=\"cached\"]').textContent;"),
        json!("1")
    );
    assert_eq!(
        browser.eval("return document.querySelector('svg.dag .node text.count').textContent;"),
        json!("1/1 cached")
    );
    assert_eq!(
        browser.eval("return document.querySelector('td[data-progress-of=\"0\"]').textContent;"),
        json!("")
    );
}

/// Issue 35: a first view that planned its page's rows alone (`data-partial`) fills in the
/// counts, the graph and the metric columns of the other rows once the whole state is there,
/// without a reload.
#[test]
fn a_first_view_of_its_page_alone_is_completed_in_chromium() {
    let Some((driver, chromium)) = chromium() else {
        return;
    };
    let project = Project::new();
    project.write(
        "pipelines/long.toml",
        "[sweep]\ni = [0, 1, 2, 3, 4]\n[stages.s]\nkind = \"test-echo\"\nparams = { value = \"${sweep.i}\" }\n",
    );
    project.run_json("pipelines/long.toml", &["s[i=4]"]);
    let server = Server::start(&project, &[]);
    let browser = Browser::start(&driver, &chromium);
    // Rows 0 and 1 are to run: the page alone has no metric, and its parameter column `value`
    // becomes `value (param)` beside the metric `value` once the whole state is there.
    browser.goto(&format!("http://{}/p/long?per=2", server.addr));
    browser.wait("document.querySelector('[data-count=\"cached\"]').textContent === '1'");
    browser.wait("document.querySelector('[data-count=\"to_run\"]').textContent === '4'");
    browser.wait("document.querySelector('svg.dag .node text.count').textContent === '1/5 cached'");
    browser.wait("document.querySelector('svg.dag .node').classList.contains('st-to-run')");
    browser.wait("!document.getElementById('table-section').dataset.partial");
    browser.wait("document.getElementById('counting') === null");
    browser.wait("[...document.querySelectorAll('#instances thead button.sort')].some(b => b.textContent === 'value (param)')");
    assert_eq!(
        browser.eval("return document.querySelectorAll('#instances tbody tr').length;"),
        json!(2)
    );
}

#[test]
fn a_researcher_overlays_curves_chooses_columns_and_reads_the_sweep_in_chromium() {
    let Some((driver, chromium)) = chromium() else {
        return;
    };
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    let browser = Browser::start(&driver, &chromium);
    let base = format!("http://{}", server.addr);

    // Metric columns: untick final_loss; the choice goes into the URL and survives a reload.
    browser.goto(&format!("{base}/p/sweep"));
    browser.eval("document.getElementById('metric-columns').open = true; return 1;");
    let untick = browser
        .element("return document.querySelector('input.metric-choice[value=\"final_loss\"]');");
    browser.click(&untick);
    browser.wait("![...document.querySelectorAll('#instances thead button.sort')].some(b => b.textContent === 'final_loss')");
    assert_eq!(
        browser.eval("return location.search;"),
        json!("?metrics=map%2Cvalue"),
        "the source's `value` is a metric too"
    );
    browser.goto(&format!("{base}/p/sweep?metrics=map%2Cvalue"));
    assert_eq!(
        browser.eval("return [...document.querySelectorAll('#instances thead button.sort')].some(b => b.textContent === 'final_loss');"),
        json!(false)
    );
    browser.screenshot("8-metric-columns.png");

    // Overlay the loss curves of two instances: one line each, the legend names them.
    let a = instance_id(&server, "sweep", "train[lambda_t=0.5,seed=0]");
    let b = instance_id(&server, "sweep", "train[lambda_t=0.7,seed=1]");
    for id in [a, b] {
        let pick = browser.element(&format!(
            "return document.querySelector('input.pick[value=\"{id}\"]');"
        ));
        browser.click(&pick);
    }
    let overlay = browser.element("return document.getElementById('overlay');");
    browser.click(&overlay);
    browser.wait("location.pathname.endsWith('/curves') && document.body.dataset.ready === '1'");
    assert_eq!(
        browser.eval("return [...document.querySelectorAll('#curves .legend text')].map(t => t.textContent);"),
        json!(["train[lambda_t=0.5,seed=0]", "train[lambda_t=0.7,seed=1]"])
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('#curves path.series').length;"),
        json!(2)
    );
    browser.screenshot("9-overlaid-curves.png");

    // The sweep page: four results as dots, parallel coordinates with a line each.
    browser.goto(&format!(
        "{base}/p/sweep/sweep?stage=train&metric=map&param=lambda_t"
    ));
    assert_eq!(
        browser.eval("return document.querySelectorAll('#scatter circle.dot').length;"),
        json!(4)
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('#parallel path.pline').length;"),
        json!(4)
    );
    browser.screenshot("10-sweep.png");
    // Picking another parameter shows the metric against it.
    browser.eval("const s = document.querySelector('select[name=\"param\"]'); s.value = 'seed'; s.dispatchEvent(new Event('change')); return 1;");
    browser.wait("location.search.includes('param=seed') && document.body.dataset.ready === '1'");
    assert_eq!(
        browser.eval("return document.querySelectorAll('#sweep-summary tbody tr').length;"),
        json!(2)
    );
}

#[test]
fn the_loss_chart_of_a_running_stage_grows_in_chromium() {
    let Some((driver, chromium)) = chromium() else {
        return;
    };
    let project = Project::new();
    project.write(
        "pipelines/live.toml",
        "[stages.train]\nkind = \"test-train\"\nparams = { epochs = 8, sleep_ms = 700 }\n",
    );
    project.write("pipelines/warm.toml", "[stages.w]\nkind = \"test-echo\"\n");
    project.run_json("pipelines/warm.toml", &[]);
    let server = Server::start(&project, &[]);
    let browser = Browser::start(&driver, &chromium);
    let mut run = project
        .cmd(&["run", "pipelines/live.toml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.get("/api/p/live/i/0").json()["status"] != "running" {
        assert!(Instant::now() < deadline, "the stage did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    browser.goto(&format!("http://{}/p/live/i/0", server.addr));
    assert!(browser
        .eval("return !!document.getElementById('live-loss');")
        .as_bool()
        .unwrap());
    // The chart gains points as epochs end, without a reload.
    let first = browser.eval("return Number(document.getElementById('live-loss').dataset.points);");
    browser.wait(&format!(
        "Number(document.getElementById('live-loss') && document.getElementById('live-loss').dataset.points) >= {} + 2",
        first.as_u64().unwrap_or(0)
    ));
    assert_eq!(
        browser.eval("return document.querySelectorAll('#live-loss path.series').length;"),
        json!(1)
    );
    browser.screenshot("11-live-loss.png");
    assert!(run.wait().unwrap().success());
}

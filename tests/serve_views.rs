//! The dashboard's analysis views over HTTP (issue 34, item 4; issue 30's search page): metric
//! column choice in the URL, server-side sorting, filtering and paging, overlaid loss curves,
//! the live loss of a running stage, the sweep page, a search's page, a pipeline's history,
//! three regression tests (pipelines in subfolders, mean ± std over an axis that feeds a
//! parameter of another name, and the status API limited to the rows a page shows), and the
//! first view of a long table, which plans its page's instances alone.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::serve::{instance_id, sweep_project, Server, SWEEP};
use super::support::Project;

/// The rows of table `id` in `html`: each row's cells as text without markup.
fn rows(html: &str, id: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}:\n{html}"));
    let body = &html[start..];
    let body = &body[body.find("<tbody>").unwrap() + 7..body.find("</tbody>").unwrap()];
    body.split("</tr>")
        .filter(|r| r.contains("<td"))
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let inner = &c[c.find('>').unwrap() + 1..];
                    let inner = inner.split("</td>").next().unwrap_or("");
                    strip_tags(inner).trim().to_string()
                })
                .collect()
        })
        .collect()
}

fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in html.chars() {
        match c {
            '<' => inside = true,
            '>' => inside = false,
            c if !inside => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

/// The header texts of table `id`.
fn headers(html: &str, id: &str) -> Vec<String> {
    let start = html.find(&format!("id=\"{id}\"")).unwrap();
    let head = &html[start..];
    let head = &head[..head.find("</tr>").unwrap()];
    head.split("<th")
        .skip(1)
        .filter(|c| !c.starts_with("ead"))
        .map(|c| strip_tags(&format!("<{c}")).trim().to_string())
        .collect()
}

/// Issue 34: pipelines in subfolders of `pipelines/` (the README's `examples/language.toml`)
/// were missing from the index. Failed before the fix: the index listed only top-level files.
#[test]
fn pipelines_in_subfolders_are_listed_and_served() {
    let project = Project::new();
    project.write(
        "pipelines/examples/language.toml",
        "[stages.hello]\nkind = \"test-echo\"\nparams = { value = 3 }\n",
    );
    project.write(
        "pipelines/examples/nested/deep.toml",
        "[stages.d]\nkind = \"test-echo\"\n",
    );
    project.write("pipelines/top.toml", "[stages.t]\nkind = \"test-echo\"\n");
    project.run_json("pipelines/examples/language.toml", &[]);
    let server = Server::start(&project, &[]);
    let home = server.get("/").text();
    for href in [
        "/p/examples%2Flanguage",
        "/p/examples%2Fnested%2Fdeep",
        "/p/top",
    ] {
        assert!(
            home.contains(&format!("href=\"{href}\"")),
            "{href}:\n{home}"
        );
    }
    let page = server.get("/p/examples%2Flanguage");
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(text.contains("data-v=\"cached\""), "{text}");
    assert!(
        text.contains("href=\"/p/examples%2Flanguage/i/0\""),
        "{text}"
    );
    let inst = server.get("/p/examples%2Flanguage/i/0");
    assert_eq!(inst.status, 200);
    assert!(inst.text().contains("data-metric=\"value\">3</span>"));
    let api = server.get("/api/p/examples%2Flanguage/status").json();
    assert_eq!(api["counts"]["cached"], 1);
    // A name is looked up in the listing, never joined to a path.
    assert_eq!(server.get("/p/examples%2F..%2Ftop").status, 404);
}

/// Issue 34: "mean ± std over an axis" did not group when the axis feeds a parameter of
/// another name (`s = [0, 1, 2]`, `seed = "${sweep.s}"`): the parameter differed inside every
/// group. Failed before the fix: three rows, one per value of `s`.
#[test]
fn mean_over_an_axis_groups_when_the_axis_feeds_a_parameter_of_another_name() {
    let project = Project::new();
    project.write(
        "pipelines/renamed.toml",
        r#"
[sweep]
s = [0, 1, 2]
v = [0.5, 0.7]

[stages.train]
kind = "test-train"
params = { value = "${sweep.v}", seed = "${sweep.s}", epochs = 2 }
"#,
    );
    project.run_json("pipelines/renamed.toml", &[]);
    let server = Server::start(&project, &[]);
    let page = server.get("/p/renamed?over=s").text();
    let table = rows(&page, "aggregated");
    assert_eq!(table.len(), 2, "one row per value of v:\n{page}");
    let heads = headers(&page, "aggregated");
    assert!(
        !heads.iter().any(|h| h == "seed"),
        "seed differs inside a group: {heads:?}"
    );
    let map = heads.iter().position(|h| h == "map").unwrap();
    // map = 0.8 v + s / 100 over s = 0, 1, 2.
    assert_eq!(table[0][map], "0.4100 ± 0.0100", "{table:?}");
    assert_eq!(table[1][map], "0.5700 ± 0.0100", "{table:?}");
    assert_eq!(table[0].last().unwrap(), "3/3 cached");
}

#[test]
fn metric_columns_are_chosen_in_the_url_and_the_table_is_sorted_filtered_and_paged_by_it() {
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    let all = server.get("/p/sweep").text();
    assert!(headers(&all, "instances").contains(&"final_loss".to_string()));
    // The source (test-echo) records `value`, the trainings `map` and `final_loss`.
    assert!(all.contains("Metric columns (3 of 3)"), "{all}");

    let chosen = server.get("/p/sweep?metrics=map").text();
    let heads = headers(&chosen, "instances");
    assert!(heads.contains(&"map".to_string()), "{heads:?}");
    assert!(!heads.contains(&"final_loss".to_string()), "{heads:?}");
    assert!(chosen.contains("Metric columns (1 of 3)"));
    assert!(
        chosen.contains("value=\"final_loss\"> final_loss"),
        "unticked: {chosen}"
    );
    assert!(chosen.contains("value=\"map\" checked> map"));
    // The views keep the choice.
    assert!(
        chosen.contains("href=\"/p/sweep?over=seed&amp;metrics=map\""),
        "{chosen}"
    );
    let none = server.get("/p/sweep?metrics=").text();
    assert!(!headers(&none, "instances").contains(&"map".to_string()));

    // Sorted by map, best first, filtered to lambda_t = 0.7, on the server.
    let sorted = server
        .get("/p/sweep?sort=map&dir=desc&f.lambda_t=%3D0.7")
        .text();
    let heads = headers(&sorted, "instances");
    let map = heads.iter().position(|h| h == "map").unwrap();
    let table = rows(&sorted, "instances");
    let maps: Vec<&str> = table.iter().map(|r| r[map].as_str()).collect();
    assert_eq!(maps, vec!["0.57", "0.56", ""], "{sorted}");
    assert!(sorted.contains(">3 of 8 rows</span>"), "{sorted}");
    assert!(sorted
        .contains("aria-sort=\"descending\"><button type=\"button\" class=\"sort\">map</button>"));
    assert!(sorted.contains("data-name=\"lambda_t\" placeholder=\"filter\" aria-label=\"filter lambda_t\" value=\"=0.7\""));

    // Pages: 3 rows a page.
    let first = server.get("/p/sweep?per=3").text();
    assert_eq!(rows(&first, "instances").len(), 3);
    assert!(first.contains("8 rows</span>, showing 1-3"), "{first}");
    assert!(first.contains("page 1 of 3"));
    let last = server.get("/p/sweep?per=3&page=3").text();
    assert_eq!(rows(&last, "instances").len(), 2);
    assert!(last.contains("showing 7-8"), "{last}");
    // The fragment the script swaps in is the same table alone.
    let fragment = server.get("/p/sweep/table?per=3&page=3");
    assert_eq!(fragment.status, 200);
    assert!(!fragment.text().contains("<html"));
    assert_eq!(rows(&fragment.text(), "instances").len(), 2);

    // The status API answers for the rows a page shows.
    let some = server.get("/api/p/sweep/status?ids=1,2").json();
    assert_eq!(some["instances"].as_array().unwrap().len(), 2);
    assert_eq!(
        some["counts"]["cached"], 5,
        "counts are still the whole pipeline's"
    );
}

#[test]
fn loss_curves_of_chosen_instances_are_overlaid_in_one_chart() {
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    let a = instance_id(&server, "sweep", "train[lambda_t=0.5,seed=0]");
    let b = instance_id(&server, "sweep", "train[lambda_t=0.7,seed=1]");
    let c = instance_id(&server, "sweep", "train[lambda_t=0.7,seed=2]");
    let page = server.get(&format!("/p/sweep/curves?ids={a},{b},{c}"));
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    let data = text
        .split("id=\"curves-data\">")
        .nth(1)
        .and_then(|t| t.split("</script>").next())
        .unwrap();
    let series: Value = serde_json::from_str(data).unwrap();
    let names: Vec<&str> = series
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["train[lambda_t=0.5,seed=0]", "train[lambda_t=0.7,seed=1]"]
    );
    let last = &series[1]["points"][3];
    assert_eq!(last[0], 4.0);
    assert!((last[1].as_f64().unwrap() - 1.7 * (-2.0f64).exp()).abs() < 1e-12);
    assert!(
        text.contains(
            "No loss curve (not cached, or its stage writes none): train[lambda_t=0.7,seed=2]"
        ),
        "{text}"
    );
    assert!(
        text.contains("<b>loss</b>") && text.contains("term=aux\">aux</a>"),
        "{text}"
    );
    let aux = server
        .get(&format!("/p/sweep/curves?ids={a},{b}&term=aux"))
        .text();
    assert!(aux.contains("data-y=\"aux\""));
    let r = server.get("/p/sweep/curves?ids=");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("one or more instances"));
}

#[test]
fn the_sweep_page_plots_a_metric_against_a_parameter_and_in_parallel_coordinates() {
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    let page = server.get("/p/sweep/sweep");
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    // Defaults: the stage with a metric that is swept, its first metric, its first parameter.
    assert!(text.contains("<option value=\"train\" selected>"), "{text}");
    assert!(
        text.contains("<option value=\"final_loss\" selected>"),
        "{text}"
    );
    let map = server
        .get("/p/sweep/sweep?stage=train&metric=map&param=lambda_t")
        .text();
    assert!(map.contains("4 of 6 instances of <code>train</code> have <code>map</code>"));
    assert_eq!(map.matches("<circle class=\"dot\"").count(), 4, "{map}");
    assert!(
        map.contains("lambda_t = 0.5: mean 0.405 ± 0.0071 over 2 results"),
        "{map}"
    );
    let summary = rows(&map, "sweep-summary");
    assert_eq!(
        summary,
        vec![
            vec!["0.5", "2", "0.405 ± 0.0071", "0.4", "0.41"],
            vec!["0.7", "2", "0.565 ± 0.0071", "0.56", "0.57"],
        ]
    );
    assert_eq!(map.matches("class=\"pline\"").count(), 4);
    assert!(map.contains("data-axis=\"seed\"") && map.contains("data-axis=\"lambda_t\""));
    assert!(map.contains("data-axis=\"map\""));
    // Against the other axis.
    let seed = server
        .get("/p/sweep/sweep?stage=train&metric=map&param=seed")
        .text();
    assert_eq!(rows(&seed, "sweep-summary").len(), 2, "seeds 0 and 1");
    for (path, hint) in [
        ("/p/sweep/sweep?stage=nope", "has no results with metrics"),
        ("/p/sweep/sweep?metric=nope", "recorded no metric `nope`"),
        ("/p/sweep/sweep?param=nope", "is not swept over `nope`"),
    ] {
        let r = server.get(path);
        assert_eq!(r.status, 404, "{path}");
        assert!(r.text().contains(hint), "{path}: {}", r.text());
    }
}

const SEARCH: &str = r#"
[pipeline]
name = "tuned"

[sweep]
seed = [0, 1]

[stages.train]
kind = "test-train"
params = { value = 0.5, seed = "${sweep.seed}", epochs = 2 }

[search.v]
objective = { stage = "train", metric = "map", goal = "max" }
sampler = "grid"

[search.v.space]
value = { param = "stages.train.params.value", choice = [0.2, 0.6, 0.4] }

[stages.final]
kind = "test-train"
params = { value = "${search.v.best.value}", epochs = 2 }
"#;

#[test]
fn a_search_page_shows_its_trials_the_winner_and_parallel_coordinates() {
    let project = Project::new();
    project.write("pipelines/tuned.toml", SEARCH);
    project.run_json("pipelines/tuned.toml", &[]);
    let server = Server::start(&project, &[]);
    let pipeline = server.get("/p/tuned").text();
    assert!(
        pipeline.contains("href=\"/p/tuned/search/v\""),
        "{pipeline}"
    );
    let page = server.get("/p/tuned/search/v");
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(
        text.contains("<b id=\"finished\">3</b> of 3 trials finished"),
        "{text}"
    );
    // map = 0.8 value + seed / 100, the mean over seeds 0 and 1.
    assert!(text.contains("The winner: trial 1 (value = 0.6)"), "{text}");
    let trials = rows(&text, "trials");
    let order: Vec<(&str, &str, &str)> = trials
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str(), r[3].as_str()))
        .collect();
    assert_eq!(
        order,
        vec![
            ("trial 1 best", "0.6", "0.485"),
            ("trial 2", "0.4", "0.325"),
            ("trial 0", "0.2", "0.165"),
        ]
    );
    assert!(text.contains("href=\"/p/tuned?f.v.trial=%3D1\""), "{text}");
    assert_eq!(text.matches("class=\"dot").count(), 3, "objective by trial");
    assert_eq!(text.matches("class=\"pline\"").count(), 3);
    // A trial's link shows its instances.
    let trial = server.get("/p/tuned?f.v.trial=%3D1").text();
    assert_eq!(rows(&trial, "instances").len(), 2, "two seeds of trial 1");
    let r = server.get("/p/tuned/search/nope");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("its searches: v"));
}

#[test]
fn the_history_lists_results_the_file_no_longer_asks_for() {
    let project = sweep_project();
    let server = Server::start(&project, &[]);
    // The report the one-off `--sweep seed=0,1` run made is not the file's (seed 2 is missing).
    let before = server.get("/p/sweep/history").text();
    let table = rows(&before, "history");
    assert_eq!(table.len(), 1, "{before}");
    assert_eq!(table[0][1], "table");
    assert_eq!(table[0][3], "its inputs or data differ");
    // Drop lambda_t = 0.7 and change the source's value: five more results leave the file.
    project.write(
        "pipelines/sweep.toml",
        &SWEEP
            .replace("lambda_t = [0.5, 0.7]", "lambda_t = [0.5]")
            .replace("params = { value = 1 }", "params = { value = 2 }"),
    );
    let page = server.get("/p/sweep/history");
    assert_eq!(page.status, 200);
    let text = page.text();
    let table = rows(&text, "history");
    assert_eq!(table.len(), 6, "{text}");
    let why: Vec<&str> = table.iter().map(|r| r[3].as_str()).collect();
    assert!(why.contains(&"value 1 (now 2)"), "{why:?}");
    assert_eq!(
        why.iter()
            .filter(|w| w.starts_with("the file no longer sweeps train[lambda_t=0.7"))
            .count(),
        2,
        "{why:?}"
    );
    assert_eq!(
        why.iter()
            .filter(|w| **w == "its inputs or data differ")
            .count(),
        3,
        "lambda_t = 0.5 trained on the old source, and the report: {why:?}"
    );
    let heads = headers(&text, "history");
    assert!(heads.contains(&"map".to_string()), "{heads:?}");
    assert!(text.contains("?name=log.txt\">log</a>"));
}

/// The instance page of a running stage draws its loss epoch by epoch from the lines it logs
/// (the live API's `loss`), before any `loss.json` exists.
#[test]
fn a_running_stage_reports_its_loss_so_far() {
    let project = Project::new();
    project.write(
        "pipelines/live.toml",
        "[stages.train]\nkind = \"test-train\"\nparams = { value = 0.5, epochs = 6, sleep_ms = 300 }\n",
    );
    project.write("pipelines/warm.toml", "[stages.w]\nkind = \"test-echo\"\n");
    project.run_json("pipelines/warm.toml", &[]);
    let server = Server::start(&project, &[]);
    let mut run = project
        .cmd(&["run", "pipelines/live.toml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen: Vec<usize> = Vec::new();
    let mut page_had_chart = false;
    loop {
        assert!(Instant::now() < deadline, "the run did not finish in 60 s");
        let doc = server.get("/api/p/live/i/0").json();
        if doc["status"] == "cached" {
            break;
        }
        if doc["status"] == "running" {
            let loss = doc["loss"].as_array().unwrap();
            for (k, p) in loss.iter().enumerate() {
                let expected = 1.5 * (-2.0 * (k + 1) as f64 / 6.0).exp();
                assert_eq!(p[0], (k + 1) as f64);
                assert!((p[1].as_f64().unwrap() - expected).abs() < 1e-5, "{p}");
            }
            if seen.last() != Some(&loss.len()) {
                seen.push(loss.len());
            }
            if !page_had_chart && !loss.is_empty() {
                page_had_chart = server
                    .get("/p/live/i/0")
                    .text()
                    .contains("id=\"live-loss\"");
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(run.wait().unwrap().success());
    assert!(seen.len() >= 3, "the loss grew while it ran: {seen:?}");
    assert!(
        page_had_chart,
        "the page of the running stage has the live chart"
    );
    let done = server.get("/api/p/live/i/0").json();
    assert_eq!(
        done["loss"],
        serde_json::json!([]),
        "a cached stage's curve is loss.json"
    );
    assert!(!server
        .get("/p/live/i/0")
        .text()
        .contains("id=\"live-loss\""));
}

/// A chain of `n` instances of `s` (`value` swept) each feeding an instance of `t`.
fn chain(n: usize) -> String {
    let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!(
        "[sweep]\ni = [{}]\n[stages.s]\nkind = \"test-echo\"\nparams = {{ value = \"${{sweep.i}}\" }}\n\
         [stages.t]\nkind = \"test-echo\"\ninputs = {{ input = \"s\" }}\nparams = {{ value = \"t\" }}\n",
        values.join(", ")
    )
}

/// Issue 35: the first view of a table of more than one page, in plan order, plans the
/// instances on its page alone (with those upstream of them) and says it is still counting; the
/// whole state is computed meanwhile, and the page's rows are those the whole state shows.
#[test]
fn the_first_view_of_a_long_table_plans_its_page_and_the_whole_state_follows() {
    let project = Project::new();
    project.write("pipelines/chain.toml", &chain(3));
    project.run_json("pipelines/chain.toml", &[]);
    project.write("pipelines/chain.toml", &chain(5));
    let server = Server::start(&project, &[]);
    // Page 3 of 3 rows each: t[i=1] and t[i=2] cached, t[i=3] waiting for s[i=3], none of
    // their inputs on the page.
    let first = server.get("/p/chain?per=3&page=3").text();
    assert!(first.contains("data-partial=\"1\""), "{first}");
    assert!(first.contains("data-count=\"cached\">…</b>"), "{first}");
    assert!(first.contains("counting the 10 instances"), "{first}");
    assert!(first.contains("…/5 cached"), "{first}");
    let partial = rows(&first, "instances");
    let statuses: Vec<&str> = partial.iter().map(|r| r[r.len() - 3].as_str()).collect();
    assert_eq!(statuses, ["cached", "cached", "to-run"], "{first}");
    assert!(
        partial[2]
            .last()
            .unwrap()
            .contains("input s[i=3] runs first"),
        "{partial:?}"
    );

    let status = server.get("/api/p/chain/status").json();
    assert_eq!(status["counts"]["cached"], 6, "{status}");
    assert_eq!(status["counts"]["to_run"], 4, "{status}");
    let whole = server.get("/p/chain?per=3&page=3").text();
    assert!(!whole.contains("data-partial"), "{whole}");
    assert!(whole.contains("data-count=\"cached\">6</b>"), "{whole}");
    assert!(whole.contains("3/5 cached"), "{whole}");
    assert_eq!(partial, rows(&whole, "instances"));

    // A sorted or filtered table, or one of a single page, needs every instance's state: a new
    // server's first view of it is whole.
    let fresh = Server::start(&project, &[]);
    for query in ["?per=3&sort=i", "?per=3&f.stage=t", "?per=3&over=i", ""] {
        let page = fresh.get(&format!("/p/chain{query}")).text();
        assert!(!page.contains("data-partial"), "{query}: {page}");
        assert!(
            page.contains("data-count=\"cached\">6</b>"),
            "{query}: {page}"
        );
    }
}

//! Height x width inputs end to end: a network trained and embedded at a non-square
//! resolution on a tiny synthetic set, a square pair that keys (and so computes) exactly as
//! the integer, and a malformed resolution refused at plan time with file:line:column.

use crate::support::Project;

fn pipeline(teacher_res: &str, db_res: &str, query_res: &str) -> String {
    format!(
        r#"
[pipeline]
name = "hw-tiny"

[stages.split]
kind = "split"
params = {{ dataset = "synthetic", classes = 4, per_class = 6, image_size = 32 }}

[stages.teacher]
kind = "train-teacher"
inputs = {{ split = "split" }}
params = {{ arch = "resnet18", width = 8, stem = "small", embed_dim = 8, resolution = {teacher_res},
           loss = "norm-softmax", scale = 16.0, optimizer = "adam", lr = 2e-3, epochs = 1,
           batch_size = 6, per_class = 0 }}

[stages.emb-db]
kind = "embed"
inputs = {{ split = "split", model = "teacher" }}
params = {{ resolution = {db_res}, view = "whole" }}

[stages.emb-q]
kind = "embed"
inputs = {{ split = "split", model = "teacher" }}
params = {{ resolution = {query_res} }}
"#
    )
}

#[test]
fn a_tall_network_trains_and_embeds_and_a_square_pair_keys_as_its_integer() {
    let p = Project::new();
    p.write("pipelines/hw.toml", &pipeline("[32, 16]", "[32, 16]", "32"));
    let first = p.run_json("pipelines/hw.toml", &[]);
    assert!(first.values().all(|(s, _)| s == "ran"), "{first:?}");

    let db = p.show_one("pipelines/hw.toml", "emb-db");
    assert_eq!(p.embeddings_shape(&db), vec![12, 8], "{db}");
    let q = p.show_one("pipelines/hw.toml", "emb-q");
    let (db_gflops, q_gflops) = (
        db["metrics"]["gflops"].as_f64().unwrap(),
        q["metrics"]["gflops"].as_f64().unwrap(),
    );
    let ratio = q_gflops / db_gflops;
    assert!(
        (1.7..2.3).contains(&ratio),
        "32 x 32 costs about twice 32 x 16: {ratio}"
    );
    assert_eq!(db["metrics"]["resolution"].as_f64(), Some(32.0));

    // `[32, 32]` is the integer 32: the same key, so nothing runs again.
    let q_key = q["key"].as_str().unwrap().to_string();
    p.write(
        "pipelines/hw.toml",
        &pipeline("[32, 16]", "[32, 16]", "[32, 32]"),
    );
    let again = p.run_json("pipelines/hw.toml", &[]);
    assert!(again.values().all(|(s, _)| s == "cached"), "{again:?}");
    assert_eq!(
        p.show_one("pipelines/hw.toml", "emb-q")["key"]
            .as_str()
            .unwrap(),
        q_key
    );
}

fn plan_error(resolution: &str) -> String {
    let p = Project::new();
    p.write("pipelines/hw.toml", &pipeline("32", resolution, "32"));
    let out = p.run(&["plan", "pipelines/hw.toml"]);
    assert!(!out.status.success(), "accepted resolution = {resolution}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_malformed_resolution_is_a_plan_error_at_its_place() {
    for (bad, found) in [
        ("\"256x128\"", "the string \"256x128\""),
        ("[256]", "the array [256]"),
        ("[256, 128, 3]", "the array [256,128,3]"),
        ("[256, 0]", "the array [256,0]"),
        ("2.5", "the float 2.5"),
    ] {
        let e = plan_error(bad);
        // The `emb-db` params line is line 19; its value starts at column 25.
        let expected = format!(
            "pipelines/hw.toml:19:25: parameter `resolution` of kind `embed` expects int or \
             [height, width], found {found}"
        );
        assert!(e.contains(&expected), "expected `{expected}` in:\n{e}");
        assert!(!e.contains("panicked"), "{e}");
    }
    let e = plan_error("0");
    assert!(
        e.contains(
            "pipelines/hw.toml:19:25: parameter `resolution` of kind `embed` must be >= 1, found 0"
        ),
        "{e}"
    );
}

#[test]
fn market1501_trains_and_embeds_at_256_x_128_and_one_override_shrinks_it() {
    let tall = asymflow::data::Resolution {
        height: 256,
        width: 128,
    };
    let market = crate::support::expand("pipelines/bct-market1501.toml", &[]);
    for stage in ["old", "new", "bct", "l2", "q-old", "g-old", "q-bct"] {
        let params = &market[stage][0];
        assert_eq!(params.resolution("resolution").unwrap(), tall, "{stage}");
    }
    assert_eq!(market["g-old"][0].str("view").unwrap(), "whole");
    let small = asymflow::spec::Override::Set("vars.res=[64, 32]".into());
    let shrunk = crate::support::expand("pipelines/bct-market1501.toml", &[small]);
    assert_eq!(
        shrunk["old"][0]
            .resolution("resolution")
            .unwrap()
            .to_string(),
        "64x32"
    );
}

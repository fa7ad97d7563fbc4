//! GeM's exponent as the resolution-asymmetry reference trains it: the paper pipelines' teacher
//! and student set 10x the learning rate and no weight decay; a network without GeM ignores
//! the setting.

use crate::support::expand;

#[test]
fn raml_paper_pipelines_train_gem_p_at_ten_times_the_rate_without_decay() {
    for file in [
        "pipelines/raml-cub200.toml",
        "pipelines/raml-cars196.toml",
        "pipelines/raml-sop.toml",
        "pipelines/raml-ablation.toml",
    ] {
        let stages = expand(file, &[]);
        let mut trained = 0;
        for (stage, instances) in &stages {
            for params in instances {
                if params.get("gem_p_lr_scale").is_none() {
                    continue;
                }
                trained += 1;
                assert_eq!(
                    params.float("gem_p_lr_scale").unwrap(),
                    10.0,
                    "{file}: {stage}"
                );
                assert!(!params.bool("gem_p_decay").unwrap(), "{file}: {stage}");
            }
        }
        assert!(trained >= 2, "{file}: a teacher and a student at least");
    }
}

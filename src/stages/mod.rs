//! The built-in stage kinds, one file per kind; [`registry`] lists them.
//!
//! What a kind declares and what a running stage sees is the protocol in [`crate::kind`].

mod distill;
mod embed;
pub mod evaluate;
mod import;
mod report;
mod split;
#[cfg(test)]
pub(crate) mod test_support;
pub mod testing;
pub mod train_bct;
pub mod train_classifier;
mod train_teacher;
mod training;
pub mod update_gain;

use crate::kind::{read_json, Params, Registry, Stage};

/// The registry of every built-in kind.
pub fn registry() -> Registry {
    let mut registry = Registry::empty();
    for stage in builtin_kinds() {
        registry.register(stage);
    }
    registry
}

fn builtin_kinds() -> Vec<Box<dyn Stage>> {
    vec![
        Box::new(split::Split),
        Box::new(train_teacher::TrainTeacher),
        Box::new(distill::Distill),
        Box::new(embed::Embed),
        Box::new(import::Import),
        Box::new(evaluate::Evaluate),
        Box::new(update_gain::UpdateGainStage),
        Box::new(train_classifier::TrainClassifier),
        Box::new(train_bct::TrainBct),
        Box::new(report::Report),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_default_parses_and_has_its_declared_type() {
        for stage in registry().kinds() {
            for decl in stage.params() {
                if let Some(value) = decl.default_value() {
                    assert!(
                        decl.ty.accepts(&value) || value.is_null(),
                        "{}.{}: default {value} is not {}",
                        stage.kind(),
                        decl.name,
                        decl.ty.describe()
                    );
                }
            }
        }
    }
}

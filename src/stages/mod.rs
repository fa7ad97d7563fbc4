//! The built-in stage kinds, one file per kind; [`registry`] lists them.
//!
//! What a kind declares and what a running stage sees is the protocol in [`crate::kind`].

pub mod command;
pub mod distill;
pub mod embed;
pub mod evaluate;
pub mod groups;
pub mod import;
pub mod outputs;
pub mod report;
pub mod split;
#[cfg(any(test, feature = "test-kinds"))]
pub mod testing;
pub mod train_bct;
pub mod train_classifier;
pub mod train_teacher;
pub mod training;
pub mod update_gain;

use crate::kind::Registry;

/// Every built-in kind's declaration, with the runners of the kinds that need no tensors
/// (`split`, `update-gain`, `report`): the engine runs those itself. The kinds that need
/// tensors run in worker processes, whose registry (`asymflow_tensor::registry`) adds their
/// runners to this one.
pub fn registry() -> Registry {
    let mut registry = Registry::empty();
    registry.register_runnable(split::Split);
    registry.register(Box::new(train_teacher::TrainTeacher));
    registry.register(Box::new(distill::Distill));
    registry.register(Box::new(embed::Embed));
    registry.register(Box::new(import::Import));
    registry.register(Box::new(evaluate::Evaluate));
    registry.register_runnable(update_gain::UpdateGainStage);
    registry.register(Box::new(train_classifier::TrainClassifier));
    registry.register(Box::new(train_bct::TrainBct));
    registry.register_runnable(report::Report);
    registry.register_runnable(command::CommandKind);
    registry
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

    #[test]
    fn no_kind_declares_a_name_twice_and_no_old_name_is_a_current_one() {
        for stage in registry().kinds() {
            let names: Vec<&str> = stage.params().iter().map(|d| d.name).collect();
            for (i, name) in names.iter().enumerate() {
                assert!(
                    !names[..i].contains(name),
                    "{}: `{name}` declared twice",
                    stage.kind()
                );
            }
            for alias in stage.params().iter().flat_map(|d| d.aliases) {
                assert!(
                    !names.contains(&alias.old),
                    "{}: old name `{}` is declared",
                    stage.kind(),
                    alias.old
                );
            }
        }
    }

    #[test]
    fn a_shared_parameter_means_the_same_in_every_kind() {
        let mut seen: std::collections::BTreeMap<&str, (&str, String)> = Default::default();
        for stage in registry().kinds() {
            for decl in stage.params().iter().filter(|d| d.group.is_some()) {
                let meaning = (decl.group.unwrap_or(""), decl.ty.describe());
                let first = seen.entry(decl.name).or_insert(meaning.clone());
                assert_eq!(*first, meaning, "{}.{}", stage.kind(), decl.name);
            }
        }
        for name in ["lr", "geometric", "epochs", "arch"] {
            assert!(seen.contains_key(name), "{name} is in a group");
        }
    }

    #[test]
    fn every_builtin_slot_is_fed_by_some_builtin_kind_and_every_kind_declares_outputs() {
        let registry = registry();
        for stage in registry.kinds() {
            assert!(
                !stage.outputs().is_empty(),
                "{} declares no outputs",
                stage.kind()
            );
            for slot in stage.inputs() {
                assert!(!slot.accepts.is_empty(), "{}.{}", stage.kind(), slot.name);
                assert!(
                    registry.kinds().any(|k| crate::kind::fits(k, slot.accepts)),
                    "no kind feeds {}.{}",
                    stage.kind(),
                    slot.name
                );
            }
        }
    }
}

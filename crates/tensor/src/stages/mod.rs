//! How the stage kinds that need tensors run. Each kind is declared once, in the engine
//! (`asymflow::stages`: parameters, inputs, `IMPL_VERSION`, fingerprint); the files here hold
//! only its [`Run`] implementation.

mod distill;
mod embed;
mod evaluate;
mod import;
mod resume;
mod train_bct;
mod train_classifier;
mod train_teacher;
mod training;

use asymflow::kind::{Registry, Run, Stage};
use asymflow::stages as decl;

/// Every built-in kind, each with a runner: the engine's registry plus the tensor kinds' runs.
pub fn registry() -> Registry {
    let mut registry = asymflow::stages::registry();
    let runners: [(&dyn Stage, Box<dyn Run>); 7] = [
        (
            &decl::train_teacher::TrainTeacher,
            Box::new(train_teacher::TrainTeacher),
        ),
        (&decl::distill::Distill, Box::new(distill::Distill)),
        (&decl::embed::Embed, Box::new(embed::Embed)),
        (&decl::import::Import, Box::new(import::Import)),
        (&decl::evaluate::Evaluate, Box::new(evaluate::Evaluate)),
        (
            &decl::train_classifier::TrainClassifier,
            Box::new(train_classifier::TrainClassifier),
        ),
        (&decl::train_bct::TrainBct, Box::new(train_bct::TrainBct)),
    ];
    for (stage, run) in runners {
        registry.register_runner(stage.kind(), run);
    }
    registry
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_declared_kind_has_a_runner() {
        let registry = super::registry();
        for kind in registry.names() {
            assert!(registry.runner(kind).is_some(), "{kind} has no runner");
        }
    }
}

//! The registry of kinds: kind names mapped to their declarations, and to runners for the
//! kinds this process can run (the engine declares every kind; a tensor worker also runs
//! those that need tensors).

use super::{Run, Stage};

/// Maps kind names to their declarations, and to runners for the kinds this process can run.
pub struct Registry {
    kinds: Vec<Box<dyn Stage>>,
    runners: Vec<(&'static str, Box<dyn Run>)>,
}

impl Registry {
    /// An empty registry (tests add their own kinds).
    pub fn empty() -> Self {
        Registry {
            kinds: Vec::new(),
            runners: Vec::new(),
        }
    }

    /// Adds a kind's declaration; a later kind of the same name replaces the earlier one.
    pub fn register(&mut self, stage: Box<dyn Stage>) {
        self.kinds.retain(|k| k.kind() != stage.kind());
        self.kinds.push(stage);
    }

    /// Adds the runner of a declared kind (`kind` is its name).
    pub fn register_runner(&mut self, kind: &'static str, run: Box<dyn Run>) {
        self.runners.retain(|(k, _)| *k != kind);
        self.runners.push((kind, run));
    }

    /// Adds a kind that declares and runs itself.
    pub(crate) fn register_runnable<T: Stage + Run + Clone + 'static>(&mut self, stage: T) {
        let kind = stage.kind();
        self.register(Box::new(stage.clone()));
        self.register_runner(kind, Box::new(stage));
    }

    /// The kind called `name`.
    pub fn get(&self, name: &str) -> Option<&dyn Stage> {
        self.kinds
            .iter()
            .find(|k| k.kind() == name)
            .map(|k| k.as_ref())
    }

    /// The runner of kind `name`, if this process can run it.
    pub fn runner(&self, name: &str) -> Option<&dyn Run> {
        self.runners
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, r)| r.as_ref())
    }

    /// Every kind, in registration order.
    pub fn kinds(&self) -> impl Iterator<Item = &dyn Stage> {
        self.kinds.iter().map(|k| k.as_ref())
    }

    /// Every kind name.
    pub fn names(&self) -> Vec<&'static str> {
        self.kinds.iter().map(|k| k.kind()).collect()
    }
}

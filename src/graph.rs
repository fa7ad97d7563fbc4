//! Expansion of stages into stage instances, and the sealed DAG between them.
//!
//! A stage fans out over the sweep dimensions its parameters use plus the dimensions of its
//! inputs, minus the dimensions it gathers. An instance is one coordinate in each of those
//! dimensions (a zip group is one dimension, so its axes vary together). An input connects an
//! instance to every upstream instance that agrees with it on the dimensions both have: exactly
//! one for a plain input, all of them across the gathered dimensions for a gathered one. A
//! stage that uses no axis of its downstream (a teacher shared by many students) therefore has
//! one instance, trained once.
//!
//! The graph is built, checked (stage-level cycles are reported with the cycle named), then
//! sealed in a [`Plan`] that keeps the instances (each with its input edges) and a
//! topological order, and only hands out read access: nothing downstream can add an edge.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;

use crate::kind::{Draw, Params, Registry};
use crate::spec::search::ResumeLink;
use crate::spec::{PipelineSpec, SpecError, StageSpec};

/// One stage with every sweep axis it uses bound.
///
/// A sweep of 100,000 instances holds 100,000 of these, so what instances have in common is
/// shared: the parameters of a stage whose parameters use no axis are one `Arc` for all its
/// instances, and a planned instance ([`crate::exec::PlannedInstance`]) shares its
/// instance's parameters and binding instead of copying them.
#[derive(Debug, Clone)]
pub struct Instance {
    /// Position in [`Plan::instances`].
    pub index: usize,
    /// The stage's name.
    pub stage: String,
    /// The stage's kind.
    pub kind: String,
    /// Dimension -> coordinate (index into the dimension's values).
    pub(crate) coords: Coords,
    /// Axis -> value, for every axis of every dimension the instance has.
    pub binding: Binding,
    /// The parameters with the binding applied.
    pub params: Arc<Params>,
    /// Slot -> upstream instance indices (one per plain input; many when gathered).
    pub inputs: BTreeMap<String, Vec<usize>>,
    /// Whether the instance gathers (its inputs' identities then matter to its output).
    pub gathers: bool,
}

/// Dimension -> coordinate of one instance, sorted by dimension. A slice rather than a map:
/// an instance has a few dimensions, and a map's smallest node is hundreds of bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Coords(Box<[(Arc<str>, usize)]>);

impl Coords {
    /// The coordinate in dimension `dim`, when the instance has that dimension.
    pub fn get(&self, dim: &str) -> Option<usize> {
        self.0
            .binary_search_by(|(d, _)| (**d).cmp(dim))
            .ok()
            .map(|i| self.0[i].1)
    }

    /// These coordinates with `dim` (which they have) at `c`.
    fn with(&self, dim: &str, c: usize) -> Coords {
        Coords(
            self.0
                .iter()
                .map(|(d, old)| (d.clone(), if **d == *dim { c } else { *old }))
                .collect(),
        )
    }
}

/// Axis -> value of one instance, sorted by axis: read as a map (and serialised as one, the
/// same JSON as a `BTreeMap`), held as a shared slice, since a map's smallest node is hundreds
/// of bytes and a planned instance shares its instance's binding.
#[derive(Debug, Clone, Default)]
pub struct Binding(Arc<[(String, Value)]>);

impl Binding {
    /// The value of `axis`, when bound.
    pub fn get(&self, axis: &str) -> Option<&Value> {
        self.0
            .binary_search_by(|(a, _)| a.as_str().cmp(axis))
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// Each axis and its value, by axis.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> + '_ {
        self.0.iter().map(|(a, v)| (a, v))
    }

    /// The axes, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &String> + '_ {
        self.0.iter().map(|(a, _)| a)
    }

    /// Whether nothing is bound.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The binding as a map.
    pub(crate) fn to_map(&self) -> BTreeMap<String, Value> {
        self.0.iter().cloned().collect()
    }
}

impl From<BTreeMap<String, Value>> for Binding {
    fn from(map: BTreeMap<String, Value>) -> Self {
        Binding(map.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a Binding {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(a, v)| (a, v))
    }
}

impl PartialEq<BTreeMap<String, Value>> for Binding {
    fn eq(&self, other: &BTreeMap<String, Value>) -> bool {
        self.0.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl serde::Serialize for Binding {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

/// `stage[axis=value,...]` for a stage's name and an instance's binding (a [`Binding`] or a
/// map of one), or just `stage` when nothing is bound: how every command names an instance.
pub(crate) fn label_of<'a>(
    stage: &str,
    binding: impl IntoIterator<Item = (&'a String, &'a Value)>,
) -> String {
    let parts: Vec<String> = binding
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            v => format!("{k}={v}"),
        })
        .collect();
    if parts.is_empty() {
        return stage.to_string();
    }
    format!("{stage}[{}]", parts.join(","))
}

impl Instance {
    /// `stage[axis=value, ...]`, or just `stage` when nothing is bound.
    pub fn label(&self) -> String {
        label_of(&self.stage, &self.binding)
    }
}

/// The sealed instance DAG of a pipeline.
#[derive(Debug)]
pub struct Plan {
    spec: PipelineSpec,
    instances: Vec<Instance>,
    order: Vec<usize>,
    searches: Vec<crate::search::SearchState>,
}

impl Plan {
    /// Expands `spec` into instances and builds their DAG.
    pub fn build(spec: PipelineSpec) -> Result<Plan, SpecError> {
        let stage_order = stage_order(&spec)?;
        let mut instances: Vec<Instance> = Vec::new();
        let mut by_stage: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut dims_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for &si in &stage_order {
            let stage = &spec.stages[si];
            let dims = stage_dims(&spec, stage, &dims_of)?;
            check_size(&spec, stage, &dims, instances.len())?;
            let created = expand(&spec, stage, &dims, &by_stage, &instances)?;
            let mut indices = Vec::new();
            for mut inst in created {
                inst.index = instances.len();
                indices.push(inst.index);
                instances.push(inst);
            }
            for link in spec.resumes.iter().filter(|l| l.stage == stage.name) {
                link_resumes(&mut instances, &indices, link);
            }
            by_stage.insert(stage.name.clone(), indices);
            dims_of.insert(stage.name.clone(), dims);
        }
        let mut graph = DiGraph::new();
        let nodes: Vec<NodeIndex> = instances.iter().map(|i| graph.add_node(i.index)).collect();
        for inst in &instances {
            for ups in inst.inputs.values() {
                for &u in ups {
                    graph.add_edge(nodes[u], nodes[inst.index], ());
                }
            }
        }
        let order = petgraph::algo::toposort(&graph, None)
            .expect("instance edges follow the stage order, which is acyclic")
            .into_iter()
            .map(|n| graph[n])
            .collect();
        Ok(Plan {
            spec,
            instances,
            order,
            searches: Vec::new(),
        })
    }

    /// This plan with where its searches stand ([`crate::exec::search`]).
    pub(crate) fn with_searches(mut self, searches: Vec<crate::search::SearchState>) -> Plan {
        self.searches = searches;
        self
    }

    /// Where the pipeline's searches stand: their trials so far, and the stages waiting for
    /// their winners (empty for a pipeline without searches).
    pub fn searches(&self) -> &[crate::search::SearchState] {
        &self.searches
    }

    /// The resolved pipeline.
    pub fn spec(&self) -> &PipelineSpec {
        &self.spec
    }

    /// Every instance, stages in dependency order and each stage's instances by coordinate.
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// Instance indices in a topological order.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// The stochastic instances (a kind's [`crate::kind::Stage::stochastic`] for the
    /// instance's params) that instance `u` descends from, `u` itself included when it is one,
    /// upstream first: the random draws its result depends on. A report compares them across
    /// the instances of a cell to say which draws its spread covers.
    pub fn draws(&self, u: usize, registry: &Registry) -> Vec<Draw> {
        let mut seen = BTreeSet::from([u]);
        let mut stack = vec![u];
        while let Some(i) = stack.pop() {
            for &up in self.instances[i].inputs.values().flatten() {
                if seen.insert(up) {
                    stack.push(up);
                }
            }
        }
        // Instances are stored stages in dependency order, so index order is upstream first.
        seen.into_iter()
            .map(|i| &self.instances[i])
            .filter(|inst| {
                registry
                    .get(&inst.kind)
                    .is_some_and(|k| k.stochastic(&inst.params))
            })
            .map(|inst| Draw {
                stage: inst.stage.clone(),
                instance: inst.label(),
            })
            .collect()
    }

    /// This plan with only the instances in `keep`, renumbered in their order. `keep` must
    /// hold every instance upstream of each one it holds ([`crate::select::narrow`] makes it
    /// so): an instance's key depends on its inputs, which therefore stay.
    pub(crate) fn keep_only(self, keep: &BTreeSet<usize>) -> Plan {
        let new_index: BTreeMap<usize, usize> = keep
            .iter()
            .enumerate()
            .map(|(new, &old)| (old, new))
            .collect();
        let renumber = |old: &usize| -> usize {
            *new_index
                .get(old)
                .expect("a kept instance's inputs are kept")
        };
        let instances: Vec<Instance> = self
            .instances
            .into_iter()
            .filter(|i| keep.contains(&i.index))
            .map(|mut i| {
                i.index = renumber(&i.index);
                for ups in i.inputs.values_mut() {
                    ups.iter_mut().for_each(|u| *u = renumber(u));
                }
                i
            })
            .collect();
        let order = self
            .order
            .iter()
            .filter(|i| keep.contains(i))
            .map(renumber)
            .collect();
        Plan {
            spec: self.spec,
            instances,
            order,
            searches: self.searches,
        }
    }

    /// The instances of stage `name`.
    pub(crate) fn instances_of<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Instance> + 'a {
        self.instances.iter().filter(move |i| i.stage == name)
    }
}

/// Connects each instance of `link.stage` (its `indices`) to the instance of the same stage
/// it resumes from: the same coordinates, but `link.from`'s coordinate in `link.dimension`.
/// That one comes first in the dimension, so it is created first and indices stay upstream
/// first.
fn link_resumes(instances: &mut [Instance], indices: &[usize], link: &ResumeLink) {
    let by_coords: BTreeMap<Coords, usize> = indices
        .iter()
        .map(|&i| (instances[i].coords.clone(), i))
        .collect();
    for &i in indices {
        let Some(c) = instances[i].coords.get(&link.dimension) else {
            continue;
        };
        let Some(Some(from)) = link.from.get(c) else {
            continue;
        };
        let coords = instances[i].coords.with(&link.dimension, *from);
        if let Some(&u) = by_coords.get(&coords) {
            instances[i].inputs.insert(link.slot.clone(), vec![u]);
        }
    }
}

/// Stage indices in dependency order; a cycle is an error naming it.
fn stage_order(spec: &PipelineSpec) -> Result<Vec<usize>, SpecError> {
    let mut graph = DiGraph::<usize, ()>::new();
    let nodes: Vec<NodeIndex> = (0..spec.stages.len()).map(|i| graph.add_node(i)).collect();
    let index_of = |name: &str| spec.stages.iter().position(|s| s.name == name);
    for (i, stage) in spec.stages.iter().enumerate() {
        for input in &stage.inputs {
            for up in &input.stages {
                if let Some(u) = index_of(up) {
                    graph.add_edge(nodes[u], nodes[i], ());
                }
            }
        }
    }
    match petgraph::algo::toposort(&graph, None) {
        Ok(order) => Ok(order.into_iter().map(|n| graph[n]).collect()),
        Err(cycle) => {
            let start = graph[cycle.node_id()];
            let path = find_cycle(spec, start);
            let stage = &spec.stages[start];
            let loc = stage
                .inputs
                .iter()
                .find(|i| i.stages.iter().any(|s| path.contains(s)))
                .map_or(&stage.loc, |i| &i.loc);
            Err(
                SpecError::at(loc, format!("dependency cycle: {}", path.join(" -> ")))
                    .hint("a stage cannot depend on its own results; remove one of these inputs"),
            )
        }
    }
}

/// The names along a cycle through stage `start`: `a -> b -> a`.
fn find_cycle(spec: &PipelineSpec, start: usize) -> Vec<String> {
    fn dfs(
        spec: &PipelineSpec,
        target: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let Some(stage) = spec.stage(at) else {
            return false;
        };
        for input in &stage.inputs {
            for up in &input.stages {
                if up == target {
                    path.push(up.clone());
                    return true;
                }
                if seen.insert(up.clone()) {
                    path.push(up.clone());
                    if dfs(spec, target, up, path, seen) {
                        return true;
                    }
                    path.pop();
                }
            }
        }
        false
    }
    let name = spec.stages[start].name.clone();
    let mut path = vec![name.clone()];
    dfs(spec, &name, &name, &mut path, &mut BTreeSet::new());
    // `path` follows inputs upstream; show it in the direction data flows.
    path.reverse();
    path
}

/// The dimensions a stage's instances vary along.
fn stage_dims(
    spec: &PipelineSpec,
    stage: &StageSpec,
    dims_of: &BTreeMap<String, BTreeSet<String>>,
) -> Result<BTreeSet<String>, SpecError> {
    let dim_of = |axis: &str| spec.axis(axis).map(|a| a.dimension.clone());
    let gathered: BTreeSet<String> = stage.gather.iter().filter_map(|a| dim_of(a)).collect();
    let mut own_axes = BTreeSet::new();
    stage.params.values().for_each(|t| t.axes(&mut own_axes));
    let mut dims = BTreeSet::new();
    for axis in &own_axes {
        let dim = dim_of(axis).unwrap_or_else(|| axis.clone());
        if gathered.contains(&dim) {
            return Err(SpecError::at(
                &stage.loc,
                format!(
                    "stage `{}` uses axis `{axis}` in its params but gathers its dimension `{dim}`",
                    stage.name
                ),
            ));
        }
        dims.insert(dim);
    }
    for input in &stage.inputs {
        for up in &input.stages {
            for dim in dims_of.get(up).into_iter().flatten() {
                if !gathered.contains(dim) {
                    dims.insert(dim.clone());
                }
            }
        }
    }
    Ok(dims)
}

pub(crate) use crate::spec::sweep::MAX_INSTANCES;

/// Refuses a stage whose instances, counted before any is made, would take the pipeline past
/// [`MAX_INSTANCES`]; the error names the axes and their lengths.
fn check_size(
    spec: &PipelineSpec,
    stage: &StageSpec,
    dims: &BTreeSet<String>,
    already: usize,
) -> Result<(), SpecError> {
    let mut factors = Vec::new();
    let mut count: Option<usize> = Some(1);
    for dim in dims {
        let axes: Vec<&crate::spec::Axis> =
            spec.axes.iter().filter(|a| &a.dimension == dim).collect();
        let len = axes.first().map_or(1, |a| a.values.len());
        let names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
        factors.push(format!("{} ({len})", names.join("+")));
        count = count.and_then(|c| c.checked_mul(len));
    }
    let total = count.and_then(|c| c.checked_add(already));
    if total.is_some_and(|t| t <= MAX_INSTANCES) {
        return Ok(());
    }
    let count = count.map_or_else(|| "more than 2^64".to_string(), |c| c.to_string());
    Err(SpecError::at(
        &stage.loc,
        format!(
            "stage `{}` would expand to {count} instances over the sweep axes {}, \
             taking the pipeline past the limit of {MAX_INSTANCES} instances",
            stage.name,
            factors.join(" x ")
        ),
    )
    .hint("sweep fewer values, or split the sweep across several pipelines"))
}

/// The instances of one stage.
fn expand(
    spec: &PipelineSpec,
    stage: &StageSpec,
    dims: &BTreeSet<String>,
    by_stage: &BTreeMap<String, Vec<usize>>,
    existing: &[Instance],
) -> Result<Vec<Instance>, SpecError> {
    let dim_len = |dim: &str| {
        spec.axes
            .iter()
            .find(|a| a.dimension == dim)
            .map_or(1, |a| a.values.len())
    };
    let ordered_dims = ordered_dimensions(spec, dims);
    let lens: Vec<usize> = ordered_dims.iter().map(|d| dim_len(d)).collect();
    // Where each dimension goes in an instance's sorted coordinates, and each bound axis's
    // position among the ordered dimensions.
    let mut sorted: Vec<usize> = (0..ordered_dims.len()).collect();
    sorted.sort_by(|&a, &b| ordered_dims[a].cmp(&ordered_dims[b]));
    let axes: Vec<(&crate::spec::Axis, usize)> = spec
        .axes
        .iter()
        .filter_map(|a| {
            let at = ordered_dims.iter().position(|d| **d == *a.dimension)?;
            Some((a, at))
        })
        .collect();
    let mut own_axes = BTreeSet::new();
    stage.params.values().for_each(|t| t.axes(&mut own_axes));
    let bind = |binding: &BTreeMap<String, Value>| {
        Arc::new(Params(
            stage
                .params
                .iter()
                .map(|(k, t)| (k.clone(), t.bind(binding)))
                .collect(),
        ))
    };
    // Parameters that use no axis are the same for every instance: made once, shared.
    let shared = own_axes.is_empty().then(|| bind(&BTreeMap::new()));
    let gathers = !stage.gather.is_empty();
    let upstream = upstream_lookups(stage, by_stage, existing, &ordered_dims);
    let count: usize = lens.iter().product();
    let mut out = Vec::with_capacity(count);
    let mut at = vec![0usize; ordered_dims.len()];
    for n in 0..count {
        let mut rest = n;
        for (d, &len) in lens.iter().enumerate().rev() {
            at[d] = rest % len;
            rest /= len;
        }
        let coords = Coords(
            sorted
                .iter()
                .map(|&d| (ordered_dims[d].clone(), at[d]))
                .collect(),
        );
        let binding: BTreeMap<String, Value> = axes
            .iter()
            .map(|(axis, d)| (axis.name.clone(), axis.values[at[*d]].clone()))
            .collect();
        let params = match &shared {
            Some(params) => params.clone(),
            None => bind(&binding),
        };
        let mut inputs = BTreeMap::new();
        for (input, ups) in stage.inputs.iter().zip(&upstream) {
            let connected = ups.iter().flat_map(|up| up.agreeing(&coords)).collect();
            inputs.insert(input.slot.clone(), connected);
        }
        out.push(Instance {
            index: 0,
            stage: stage.name.clone(),
            kind: stage.kind.clone(),
            coords,
            binding: Binding::from(binding),
            params,
            inputs,
            gathers,
        });
    }
    Ok(out)
}

/// The dimensions of `dims` in axis-declaration order: coordinate combinations are made in
/// that order, the first dimension varying slowest.
fn ordered_dimensions(spec: &PipelineSpec, dims: &BTreeSet<String>) -> Vec<Arc<str>> {
    let mut seen: Vec<Arc<str>> = Vec::new();
    for a in &spec.axes {
        if dims.contains(&a.dimension) && !seen.iter().any(|d| **d == *a.dimension) {
            seen.push(Arc::from(a.dimension.as_str()));
        }
    }
    seen
}

/// Per input of `stage`, per upstream stage it names: that stage's instances grouped for the
/// look-up of those that agree with an instance of `stage`.
fn upstream_lookups(
    stage: &StageSpec,
    by_stage: &BTreeMap<String, Vec<usize>>,
    existing: &[Instance],
    ordered_dims: &[Arc<str>],
) -> Vec<Vec<Agreeing>> {
    stage
        .inputs
        .iter()
        .map(|input| {
            input
                .stages
                .iter()
                .map(|up| {
                    Agreeing::new(
                        by_stage.get(up).map_or(&[], Vec::as_slice),
                        existing,
                        ordered_dims,
                    )
                })
                .collect()
        })
        .collect()
}

/// The instances of one upstream stage, grouped by their coordinates in the dimensions the
/// downstream stage has too, so that each downstream instance finds the upstream instances
/// that agree with it (the same coordinate in every dimension both have) in one look-up. It
/// compared itself with every upstream instance before, which made 10^10 comparisons for a
/// stage downstream of a 100,000-instance sweep.
struct Agreeing {
    /// The upstream stage's instances, in order.
    ups: Vec<usize>,
    /// One group per set of shared dimensions (a stage's instances normally have one).
    groups: Vec<SharedDims>,
}

/// Upstream instances that share the same dimensions with the downstream stage.
struct SharedDims {
    /// Those dimensions, sorted.
    dims: Vec<Arc<str>>,
    /// Their coordinates -> positions in [`Agreeing::ups`], ascending.
    at: HashMap<Vec<usize>, Vec<usize>>,
}

impl Agreeing {
    /// Groups `ups` (indices into `existing`) by their coordinates in `dims`, the downstream
    /// stage's dimensions.
    fn new(ups: &[usize], existing: &[Instance], dims: &[Arc<str>]) -> Agreeing {
        let mut groups: Vec<SharedDims> = Vec::new();
        for (pos, &u) in ups.iter().enumerate() {
            let (shared, key): (Vec<Arc<str>>, Vec<usize>) = existing[u]
                .coords
                .0
                .iter()
                .filter(|(d, _)| dims.contains(d))
                .map(|(d, c)| (d.clone(), *c))
                .unzip();
            let group = match groups.iter().position(|g| g.dims == shared) {
                Some(g) => g,
                None => {
                    groups.push(SharedDims {
                        dims: shared,
                        at: HashMap::new(),
                    });
                    groups.len() - 1
                }
            };
            groups[group].at.entry(key).or_default().push(pos);
        }
        Agreeing {
            ups: ups.to_vec(),
            groups,
        }
    }

    /// The upstream instances that agree with `coords` (an instance of the downstream stage,
    /// which has every one of its dimensions), in upstream order.
    fn agreeing(&self, coords: &Coords) -> Vec<usize> {
        let mut found: Vec<usize> = Vec::new();
        for group in &self.groups {
            let key: Option<Vec<usize>> = group.dims.iter().map(|d| coords.get(d)).collect();
            if let Some(positions) = key.and_then(|k| group.at.get(&k)) {
                found.extend(positions);
            }
        }
        if self.groups.len() > 1 {
            found.sort_unstable();
        }
        found.into_iter().map(|pos| self.ups[pos]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(coords: &[(&str, usize)]) -> Instance {
        let mut coords: Vec<(Arc<str>, usize)> =
            coords.iter().map(|&(d, c)| (Arc::from(d), c)).collect();
        coords.sort();
        Instance {
            index: 0,
            stage: "up".into(),
            kind: "test".into(),
            coords: Coords(coords.into()),
            binding: Binding::default(),
            params: Arc::new(Params::default()),
            inputs: BTreeMap::new(),
            gathers: false,
        }
    }

    /// The look-up finds what comparing with every upstream instance finds, in the same
    /// order, whichever dimensions the downstream stage shares, gathers or adds, and when the
    /// upstream instances do not all have the same dimensions.
    #[test]
    fn an_instance_finds_exactly_the_upstream_instances_that_agree_with_it() {
        let mut existing = Vec::new();
        for a in 0..3 {
            for b in 0..2 {
                existing.push(instance(&[("a", a), ("b", b)]));
            }
        }
        existing.push(instance(&[("a", 1)]));
        existing.push(instance(&[]));
        let ups: Vec<usize> = (0..existing.len()).collect();
        let compared = |coords: &Coords| -> Vec<usize> {
            ups.iter()
                .copied()
                .filter(|&u| {
                    existing[u]
                        .coords
                        .0
                        .iter()
                        .all(|(d, c)| coords.get(d).is_none_or(|mine| mine == *c))
                })
                .collect()
        };
        for dims in [
            vec![],
            vec!["a"],
            vec!["b"],
            vec!["a", "b"],
            vec!["a", "c"],
            vec!["c"],
        ] {
            let dims: Vec<Arc<str>> = dims.into_iter().map(Arc::from).collect();
            let index = Agreeing::new(&ups, &existing, &dims);
            for n in 0..3usize.pow(dims.len() as u32) {
                let at: Vec<(&str, usize)> = dims
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (&**d, n / 3usize.pow(i as u32) % 3))
                    .collect();
                let coords = instance(&at).coords;
                assert_eq!(
                    index.agreeing(&coords),
                    compared(&coords),
                    "{dims:?} at {at:?}"
                );
            }
        }
    }
}

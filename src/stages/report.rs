//! The `report` kind: a paper's table and plots, rebuilt from the results of its inputs.
//!
//! It gathers every instance of its input stages across all sweep axes (`default_gather` is
//! `["*"]`) and renders them with [`crate::report`]: `table.md` (printed after `run`),
//! `table.csv` (the table as it reads), `results.csv` (one line per cell with the raw mean,
//! sample std, n and expected), `table.tex` (booktabs), `report.html` (self-contained, plots
//! inline), and each plot as `STEM.svg` and `STEM.png`. It trains nothing, so a change of
//! layout re-renders in milliseconds while every upstream instance stays cached.
//!
//! Instances that have not run (as `asymflow report FILE` passes them: no metrics, no
//! outputs) leave dashes or partial counts in their cells and are listed under the table.
//! Every dash or partial count carries a footnote mark giving the reason
//! ([`crate::report::footnote`]): the reason a stage recorded when it declined the metric (with
//! the draws that declined it), or that an instance has not run, or recorded no such metric.
//! A cell whose spread does not cover every stochastic stage upstream (a teacher trained once
//! for all the students' seeds) carries a footnote naming what varied and what ran once
//! ([`crate::report::provenance`]); the engine hands each input the stochastic instances it
//! descends from, and they are part of this kind's key.
//!
//! With `bootstrap`, a cell of one draw also gets a percentile bootstrap interval over its
//! evaluation's queries ([`crate::report::bootstrap`], from the input's `per_query.json`),
//! footnoted as covering the queries only, and `results.csv` gains `boot_low` and
//! `boot_high`; without it every output is what it was before the option existed.

use crate::report::{
    csv,
    heatmap::HeatMap,
    html, latex,
    loss::loss_figures,
    markdown, missing_instances,
    plot::{to_svg, write_both, xy_figure},
    Layout, ReportError, Table,
};

use crate::kind::{
    Artifact, InputDecl, OutputDecl, ParamDecl, Run, Stage, StageContext, StageError,
};

/// See the module docs.
#[derive(Clone)]
pub(crate) struct Report;

/// The kind's name, as pipeline files write it.
pub const KIND: &str = "report";

const INPUTS: &[InputDecl] = &[
    InputDecl {
        name: "results",
        required: true,
        accepts: &[Artifact::Metrics],
        doc: "Stages whose metrics fill the table (every instance, across all sweep axes).",
    },
    InputDecl {
        name: "losses",
        required: false,
        accepts: &[Artifact::Losses],
        doc: "Training stages whose `loss.json` outputs are drawn as loss curves.",
    },
];

const TABLE_MD: OutputDecl = OutputDecl::new(
    "table.md",
    Artifact::Report,
    "the table in Markdown, printed after `run`",
);
const TABLE_CSV: OutputDecl =
    OutputDecl::new("table.csv", Artifact::Report, "the table as it reads");
const RESULTS_CSV: OutputDecl = OutputDecl::new(
    "results.csv",
    Artifact::Report,
    "one line per cell: raw mean, sample std, n and expected",
);
const TABLE_TEX: OutputDecl = OutputDecl::new(
    "table.tex",
    Artifact::Report,
    "the table in LaTeX (booktabs)",
);
const PAGE: OutputDecl = OutputDecl::new(
    "report.html",
    Artifact::Report,
    "the table and plots in one self-contained page",
);

const OUTPUTS: &[OutputDecl] = &[
    TABLE_MD,
    TABLE_CSV,
    RESULTS_CSV,
    TABLE_TEX,
    PAGE,
    OutputDecl::new("*.svg", Artifact::Report, "each plot as SVG"),
    OutputDecl::new("*.png", Artifact::Report, "each plot as PNG"),
];

fn stage_error(err: ReportError) -> StageError {
    match err {
        ReportError::Layout { name, message } => StageError::BadParam { name, message },
        other => StageError::Other(other.to_string()),
    }
}

fn write(ctx: &StageContext<'_>, name: &str, text: &str) -> Result<(), StageError> {
    let path = ctx.out_path(name);
    std::fs::write(&path, text).map_err(|e| StageError::io(path, e))
}

impl Stage for Report {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn impl_version(&self) -> u32 {
        // 2: dashes and partial counts carry footnote marks saying why a value is missing.
        // 3: table.csv carries the marks too, and a `notes` column with each row's footnotes;
        //    the note names no `over` axis that no result has.
        // 4: the variation footnote (which stochastic stages a spread covers, which ran once),
        //    `over` across several axes, `ci` intervals, `paired` rows, declined draws named in
        //    their footnotes; results.csv gains ci_low, ci_high and positive.
        // 5: plots draw percentages where the table prints them, tick labels keep the decimals
        //    small values need, long titles fit the image.
        5
    }

    fn summary(&self) -> &'static str {
        "Tables (Markdown, CSV, LaTeX, HTML) and plots (SVG, PNG) from the gathered results of its inputs"
    }

    fn params(&self) -> &'static [ParamDecl] {
        crate::report::layout::PARAMS
    }

    fn inputs(&self) -> &'static [InputDecl] {
        INPUTS
    }

    fn outputs(&self) -> &'static [OutputDecl] {
        OUTPUTS
    }
    fn records(&self, _params: &crate::kind::Params) -> Option<Vec<String>> {
        crate::kind::declared(&[
            "cells",
            "cells_missing",
            "cells_partial",
            "instances_missing",
            "plots",
        ])
    }

    fn default_gather(&self) -> &'static [&'static str] {
        &["*"]
    }

    fn reads_draws(&self) -> bool {
        true
    }

    fn publishes(&self) -> bool {
        true
    }
}

impl Run for Report {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let layout = Layout::from_params(ctx.params()).map_err(stage_error)?;
        let results = ctx.input_all("results").to_vec();
        if results.is_empty() {
            return Err(StageError::Input {
                slot: "results".into(),
                message: "no instance connected; list the evaluation stages, e.g. \
                          `inputs = { results = [\"eval-asym\"] }`"
                    .into(),
            });
        }
        let table = Table::build(&layout, &results).map_err(stage_error)?;
        let missing = missing_instances(&results);

        write(ctx, TABLE_MD.file, &markdown::render(&table, &missing))?;
        write(ctx, TABLE_CSV.file, &csv::render(&table))?;
        write(ctx, RESULTS_CSV.file, &csv::render_long(&table))?;
        write(ctx, TABLE_TEX.file, &latex::render(&table))?;

        let mut plots: Vec<(String, String)> = Vec::new();
        let dir = ctx.out_dir().to_path_buf();
        if let Some(figure) = xy_figure(&layout, &results) {
            write_both(&figure, &dir).map_err(stage_error)?;
            plots.push((figure.title.clone(), to_svg(&figure).map_err(stage_error)?));
        }
        if layout.heatmap {
            if let Some(map) = HeatMap::from_table(&table, "heatmap", layout.plot_size) {
                write_both(&map, &dir).map_err(stage_error)?;
                plots.push((map.title.clone(), to_svg(&map).map_err(stage_error)?));
            }
        }
        let mut trained = ctx.input_all("losses").to_vec();
        trained.extend(results.iter().cloned());
        for figure in loss_figures(&trained, layout.plot_size).map_err(stage_error)? {
            write_both(&figure, &dir).map_err(stage_error)?;
            plots.push((figure.title.clone(), to_svg(&figure).map_err(stage_error)?));
        }
        write(ctx, PAGE.file, &html::render(&table, &missing, &plots))?;

        let (filled, empty, partial) = table.counts();
        ctx.metric("cells", filled as f64);
        ctx.metric("cells_missing", empty as f64);
        ctx.metric("cells_partial", partial as f64);
        ctx.metric("instances_missing", missing.len() as f64);
        ctx.metric("plots", plots.len() as f64);
        ctx.log(format!(
            "{} rows x {} columns: {filled} cells filled, {empty} empty, {partial} partial; {} plots",
            table.rows.len(),
            table.cols.len(),
            plots.len()
        ));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::typed::assert_reads_match_declaration;
    use serde_json::json;

    /// The report's typed parameters are its [`Layout`], declared and read in
    /// `report/layout.rs`.
    #[test]
    fn the_layout_reads_what_the_kind_declares() {
        assert_reads_match_declaration(&Report, json!({"metrics": ["map"]}), Layout::from_params);
    }
}

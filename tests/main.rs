mod report;
mod report_freshness;
mod report_templates;

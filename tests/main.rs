mod report;
mod report_freshness;

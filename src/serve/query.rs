//! What a pipeline page's URL says about its instance table: the view (`over=AXIS`), the metric
//! columns shown (`metrics=map,final_loss`), the sort (`sort=COLUMN&dir=desc`), the filters
//! (`f.COLUMN=>0.5`) and the page (`page=3&per=200`).
//!
//! Why on the server and in the URL: a sweep of 100,000 instances cannot be one HTML table
//! (the browser needs seconds to lay it out), so the server sorts, filters and cuts out one
//! page, and the script asks for another. Keeping every choice in the query means a link or
//! a reload shows the same table. Filters read as the boxes say: text (a case-insensitive
//! substring), `=text` (exact), or `>0.5`, `<=3`, `!=2`, `=7` on numbers.

use std::cmp::Ordering;

use super::html::seg;

/// Rows per page when the URL does not say.
pub(crate) const DEFAULT_PER_PAGE: usize = 200;

/// The most rows one page may ask for.
pub(crate) const MAX_PER_PAGE: usize = 5000;

/// A pipeline page's table, as its URL asks for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableQuery {
    /// `over`: group over this axis (mean ± std).
    pub over: Option<String>,
    /// `metrics`: the metric columns shown, in this order; `None` shows every metric.
    pub metrics: Option<Vec<String>>,
    /// `sort`: the header of the column sorted by.
    pub sort: Option<String>,
    /// `dir=desc`: sort descending.
    pub desc: bool,
    /// `f.COLUMN=EXPR`: (column header, expression), in the URL's order.
    pub filters: Vec<(String, String)>,
    /// `page`: from 1.
    pub page: usize,
    /// `per`: rows per page.
    pub per: usize,
}

impl TableQuery {
    /// The query of `pairs` (the URL's query, decoded); unknown keys are ignored.
    pub fn parse(pairs: &[(String, String)]) -> TableQuery {
        let mut q = TableQuery {
            page: 1,
            per: DEFAULT_PER_PAGE,
            ..TableQuery::default()
        };
        for (k, v) in pairs {
            match k.as_str() {
                "over" if !v.is_empty() => q.over = Some(v.clone()),
                "metrics" => {
                    q.metrics = Some(
                        v.split(',')
                            .map(str::trim)
                            .filter(|m| !m.is_empty())
                            .map(str::to_string)
                            .collect(),
                    )
                }
                "sort" if !v.is_empty() => q.sort = Some(v.clone()),
                "dir" => q.desc = v == "desc",
                "page" => q.page = v.parse::<usize>().unwrap_or(1).max(1),
                "per" => {
                    q.per = v
                        .parse::<usize>()
                        .unwrap_or(DEFAULT_PER_PAGE)
                        .clamp(1, MAX_PER_PAGE)
                }
                _ => {
                    if let Some(col) = k.strip_prefix("f.") {
                        if !v.trim().is_empty() {
                            q.filters.push((col.to_string(), v.clone()));
                        }
                    }
                }
            }
        }
        q
    }

    /// The query as a URL query (`?over=seed&metrics=map`), empty when everything is default.
    pub(crate) fn to_url(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(over) = &self.over {
            parts.push(format!("over={}", seg(over)));
        }
        if let Some(metrics) = &self.metrics {
            let list: Vec<String> = metrics.iter().map(|m| seg(m)).collect();
            parts.push(format!("metrics={}", list.join(",")));
        }
        if let Some(sort) = &self.sort {
            parts.push(format!("sort={}", seg(sort)));
            if self.desc {
                parts.push("dir=desc".into());
            }
        }
        for (col, expr) in &self.filters {
            parts.push(format!("f.{}={}", seg(col), seg(expr)));
        }
        if self.per != DEFAULT_PER_PAGE {
            parts.push(format!("per={}", self.per));
        }
        if self.page > 1 {
            parts.push(format!("page={}", self.page));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }

    /// The page this query asks for among `shown` rows (the last one when it asks past the
    /// end), the number of pages, and the page's first row.
    pub(crate) fn page_of(&self, shown: usize) -> (usize, usize, usize) {
        let pages = shown.div_ceil(self.per).max(1);
        let page = self.page.min(pages);
        (page, pages, (page - 1) * self.per)
    }

    /// Whether the table shows rows in plan order: the query neither groups, sorts nor
    /// filters, so no row is chosen by its values.
    pub(crate) fn in_plan_order(&self) -> bool {
        self.over.is_none() && self.sort.is_none() && self.filters.is_empty()
    }

    /// The instances the table shows when the query neither groups, sorts nor filters (rows in
    /// plan order, cut into pages) and `total` rows are more than a page: those on its page.
    /// `None` when the table needs every instance's state to choose its rows, or shows them all.
    pub(crate) fn page_in_plan_order(&self, total: usize) -> Option<std::ops::Range<usize>> {
        if !self.in_plan_order() || total <= self.per {
            return None;
        }
        let (_, _, start) = self.page_of(total);
        Some(start..total.min(start + self.per))
    }

    /// The same query on page `page`.
    pub(crate) fn on_page(&self, page: usize) -> TableQuery {
        TableQuery {
            page,
            ..self.clone()
        }
    }

    /// The same query in another view (`None`: one row per instance), on page 1.
    pub(crate) fn in_view(&self, over: Option<&str>) -> TableQuery {
        TableQuery {
            over: over.map(str::to_string),
            page: 1,
            ..self.clone()
        }
    }

    /// Whether metric `name` is shown.
    pub(crate) fn shows_metric(&self, name: &str) -> bool {
        self.metrics
            .as_ref()
            .is_none_or(|m| m.iter().any(|x| x == name))
    }
}

/// A cell as the filter and the sort see it: its text and its sort value.
pub(crate) struct Value<'a> {
    /// What the cell shows.
    pub text: &'a str,
    /// What it sorts by (`data-v`), when it differs from the text.
    pub sort: Option<&'a str>,
}

impl Value<'_> {
    fn raw(&self) -> &str {
        self.sort.unwrap_or(self.text)
    }

    fn number(&self) -> Option<f64> {
        let raw = self.raw().trim();
        if raw.is_empty() {
            return None;
        }
        raw.parse::<f64>().ok().filter(|v| !v.is_nan())
    }
}

/// Whether `value` passes the filter `expr` (see the module docs).
pub(crate) fn passes(expr: &str, value: &Value<'_>) -> bool {
    let text = expr.trim();
    if text.is_empty() {
        return true;
    }
    for op in ["<=", ">=", "!=", "<", ">", "="] {
        let Some(rhs) = text.strip_prefix(op) else {
            continue;
        };
        let rhs = rhs.trim();
        if let Ok(n) = rhs.parse::<f64>() {
            let Some(v) = value.number() else {
                return false;
            };
            return match op {
                "<" => v < n,
                "<=" => v <= n,
                ">" => v > n,
                ">=" => v >= n,
                "=" => v == n,
                _ => v != n,
            };
        }
        let shown = value.text.trim().to_lowercase();
        match op {
            "=" => return shown == rhs.to_lowercase(),
            "!=" => return shown != rhs.to_lowercase(),
            _ => break,
        }
    }
    value.text.to_lowercase().contains(&text.to_lowercase())
}

/// Whether a column whose values are `values` sorts as numbers: every non-empty one is.
pub(crate) fn is_numeric<'a, 'b: 'a>(mut values: impl Iterator<Item = &'a Value<'b>>) -> bool {
    values.all(|v| v.raw().trim().is_empty() || v.number().is_some())
}

/// The order of rows `a` and `b` (at positions `ia`, `ib`) by one column: numerically when
/// `numeric`, else as text with digits compared as numbers; empty cells last in both
/// directions, ties by position.
pub(crate) fn order(
    (a, ia): (&Value<'_>, usize),
    (b, ib): (&Value<'_>, usize),
    numeric: bool,
    desc: bool,
) -> Ordering {
    let (ra, rb) = (a.raw().trim(), b.raw().trim());
    match (ra.is_empty(), rb.is_empty()) {
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (true, true) => return ia.cmp(&ib),
        _ => {}
    }
    let c = if numeric {
        let x = a.number().unwrap_or(f64::NAN);
        let y = b.number().unwrap_or(f64::NAN);
        x.total_cmp(&y)
    } else {
        natural(ra, rb)
    };
    let c = if desc { c.reverse() } else { c };
    c.then(ia.cmp(&ib))
}

/// Text order with runs of digits compared as numbers (`train-2` before `train-10`), case
/// ignored.
fn natural(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.chars().peekable(), b.chars().peekable());
    loop {
        match (x.peek().copied(), y.peek().copied()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n: String = std::iter::from_fn(|| x.next_if(char::is_ascii_digit)).collect();
                let m: String = std::iter::from_fn(|| y.next_if(char::is_ascii_digit)).collect();
                let (n, m) = (n.trim_start_matches('0'), m.trim_start_matches('0'));
                let c = n.len().cmp(&m.len()).then_with(|| n.cmp(m));
                if c != Ordering::Equal {
                    return c;
                }
            }
            (Some(c), Some(d)) => {
                let c2 = c.to_lowercase().cmp(d.to_lowercase());
                if c2 != Ordering::Equal {
                    return c2;
                }
                x.next();
                y.next();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Value<'_> {
        Value { text, sort: None }
    }

    fn query(pairs: &[(&str, &str)]) -> TableQuery {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TableQuery::parse(&pairs)
    }

    #[test]
    fn a_page_in_plan_order_is_the_rows_the_table_shows_on_it() {
        let q = query(&[("per", "3"), ("page", "2")]);
        assert_eq!(q.page_in_plan_order(10), Some(3..6));
        // Past the end, the last page, as the table shows it.
        assert_eq!(
            query(&[("per", "3"), ("page", "9")]).page_in_plan_order(10),
            Some(9..10)
        );
        // One page, or rows chosen by their values: every instance's state is needed.
        assert_eq!(q.page_in_plan_order(3), None);
        for extra in [("sort", "i"), ("f.i", ">2"), ("over", "i")] {
            let q = query(&[("per", "3"), extra]);
            assert_eq!(q.page_in_plan_order(10), None, "{extra:?}");
        }
    }

    #[test]
    fn filters_read_like_the_boxes_say() {
        assert!(passes(">0.5", &v("0.7")));
        assert!(!passes(">0.5", &v("0.4")));
        assert!(!passes(">0.5", &v("")));
        assert!(passes("=0.7", &v("0.7")));
        assert!(passes("<=3", &v("3")));
        assert!(passes("!=2", &v("3")));
        assert!(passes("=train", &v("Train")));
        assert!(!passes("=train", &v("train2")));
        assert!(passes("rai", &v("train")));
        assert!(passes("", &v("x")));
        let exact = Value {
            text: "0.57",
            sort: Some("0.5700001"),
        };
        assert!(
            passes(">0.57", &exact),
            "numbers compare by the exact value"
        );
    }

    #[test]
    fn the_query_round_trips_through_its_url() {
        let pairs = vec![
            ("over".to_string(), "seed".to_string()),
            ("metrics".into(), "map,final_loss".into()),
            ("sort".into(), "map".into()),
            ("dir".into(), "desc".into()),
            ("f.lambda_t".into(), "=0.7".into()),
            ("page".into(), "3".into()),
            ("per".into(), "50".into()),
        ];
        let q = TableQuery::parse(&pairs);
        assert_eq!(q.metrics, Some(vec!["map".into(), "final_loss".into()]));
        assert!(q.desc && q.page == 3 && q.per == 50);
        assert_eq!(
            q.to_url(),
            "?over=seed&metrics=map,final_loss&sort=map&dir=desc&f.lambda_t=%3D0.7&per=50&page=3"
        );
        assert_eq!(TableQuery::parse(&[]).to_url(), "");
        assert!(TableQuery::parse(&[("metrics".into(), String::new())])
            .metrics
            .is_some_and(|m| m.is_empty()));
    }

    #[test]
    fn sorting_puts_empty_cells_last_and_numbers_in_order() {
        let (a, b, e) = (v("10"), v("9"), v(""));
        assert_eq!(order((&a, 0), (&b, 1), true, false), Ordering::Greater);
        assert_eq!(order((&a, 0), (&b, 1), true, true), Ordering::Less);
        assert_eq!(order((&e, 0), (&b, 1), true, true), Ordering::Greater);
        assert_eq!(natural("train-2", "train-10"), Ordering::Less);
    }
}

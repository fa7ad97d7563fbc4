//! The font plots are drawn with, shipped inside the binary.
//!
//! PNG plots need glyphs, and a fresh machine or CI image may have no font installed at all,
//! so plotters is built with its `ab_glyph` feature (no system font lookup) and one font is
//! compiled in: Liberation Sans Regular 2.1.5 (SIL Open Font License 1.1, from Debian's
//! `fonts-liberation2`; the licence is `assets/fonts/LICENSE-LiberationSans.txt`). SVG plots
//! name the family `sans-serif`, so viewers use their own sans-serif font; the embedded font
//! is used only to measure text for layout and to rasterise PNGs.

use std::sync::OnceLock;

use plotters::style::FontStyle;

use super::error::ReportError;

/// The family name plots ask for.
pub(crate) const FAMILY: &str = "sans-serif";

static FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/LiberationSans-Regular.ttf");

static REGISTERED: OnceLock<bool> = OnceLock::new();

/// Registers the embedded font under [`FAMILY`] (once per process). Every plot calls this
/// before drawing.
pub(crate) fn ensure_registered() -> Result<(), ReportError> {
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ReportError::Plot {
            name: "font".into(),
            message: "the embedded font could not be parsed (the binary is damaged)".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_font_registers_and_measures_text() {
        ensure_registered().unwrap();
        let style = plotters::style::TextStyle::from((FAMILY, 20));
        let (w, h) = style.font.box_size("mAP").unwrap();
        assert!(w > 20 && h > 5, "text box {w}x{h}");
    }
}

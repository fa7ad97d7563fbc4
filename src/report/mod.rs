//! Report tables (Markdown, CSV, LaTeX, HTML) and plots (SVG, PNG).

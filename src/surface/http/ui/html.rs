//! HTML for the web view: one escaping function, a page builder whose only way to add
//! text is through it, documents' Markdown with raw HTML made text, and small SVG charts.
//!
//! Markup the builder adds unescaped is `&'static str`, written in this module's callers'
//! source: nothing read from a repository, a log or a request can reach a page as markup.
//! The two exceptions build their markup here from escaped text and numbers: rendered
//! Markdown and the charts.

use std::fmt::Write as _;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

/// Text as HTML: `&`, `<`, `>`, `"` and `'` as entities, so that it is text in an element
/// and in a quoted attribute alike. The one escaping function of every page.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// What a query-string value keeps as it is: letters, digits and `-._~`.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A page's HTML under construction.
#[derive(Debug, Default)]
pub(super) struct Html(String);

impl Html {
    /// Markup written in the source.
    pub(super) fn raw(&mut self, markup: &'static str) -> &mut Html {
        self.0.push_str(markup);
        self
    }

    /// Text, escaped.
    pub(super) fn text(&mut self, text: &str) -> &mut Html {
        self.0.push_str(&escape(text));
        self
    }

    /// A number.
    pub(super) fn num(&mut self, n: impl std::fmt::Display) -> &mut Html {
        let _ = write!(self.0, "{n}");
        self
    }

    /// `<tag>text</tag>` with text escaped.
    pub(super) fn el(&mut self, open: &'static str, text: &str, close: &'static str) -> &mut Html {
        self.raw(open).text(text).raw(close)
    }

    /// A link: `path` with its query, percent-encoded, in an escaped `href`.
    pub(super) fn link(&mut self, path: &'static str, query: &[(&str, &str)], text: &str) -> &mut Html {
        self.raw("<a href=\"").href(path, query).raw("\">").text(text).raw("</a>")
    }

    /// `path?k=v&…` with each value percent-encoded, escaped for an attribute.
    pub(super) fn href(&mut self, path: &'static str, query: &[(&str, &str)]) -> &mut Html {
        let mut url = path.to_owned();
        for (i, (k, v)) in query.iter().filter(|(_, v)| !v.is_empty()).enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            let _ = write!(url, "{}={}", utf8_percent_encode(k, QUERY), utf8_percent_encode(v, QUERY));
        }
        self.text(&url)
    }

    /// A hidden form field with an escaped value.
    pub(super) fn hidden(&mut self, name: &'static str, value: &str) -> &mut Html {
        self.raw("<input type=\"hidden\" name=\"").raw(name).raw("\" value=\"").text(value).raw("\">")
    }

    /// A text input with an escaped value.
    pub(super) fn input(&mut self, name: &'static str, label: &'static str, value: &str) -> &mut Html {
        self.raw("<label>").raw(label).raw(" <input name=\"").raw(name).raw("\" id=\"f-").raw(name);
        self.raw("\" value=\"").text(value).raw("\"></label> ")
    }

    /// Markup this module built from escaped text and numbers.
    fn built(&mut self, markup: &str) -> &mut Html {
        self.0.push_str(markup);
        self
    }

    /// A document's Markdown, rendered (see [`markdown`]).
    pub(super) fn markdown(&mut self, text: &str) -> &mut Html {
        let rendered = markdown(text);
        self.built(&rendered)
    }

    /// A line chart of `points` (see [`chart`]).
    pub(super) fn chart(&mut self, title: &str, unit: &str, points: &[Option<f64>]) -> &mut Html {
        let svg = chart(title, unit, points);
        self.built(&svg)
    }

    pub(super) fn into_string(self) -> String {
        self.0
    }
}

/// Whether a link's target may be followed from a page: a path, a fragment, or http(s)
/// and mail addresses; `javascript:`, `data:` and the rest are not.
fn safe_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    match lower.split_once(':') {
        Some((scheme, _)) if !scheme.contains(['/', '?', '#']) => {
            matches!(scheme, "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// A document's Markdown as HTML (CommonMark with tables, strikethrough and task lists).
/// Raw HTML in it is shown as text, an HTML block as a code block; a link or an image
/// whose target is not a path or an http(s) or mail address goes nowhere.
pub(super) fn markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::CodeBlock),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) if !safe_url(&dest_url) => {
            Event::Start(Tag::Link { link_type, dest_url: CowStr::Borrowed("#"), title, id })
        }
        Event::Start(Tag::Image { link_type, dest_url, title, id }) if !safe_url(&dest_url) => {
            Event::Start(Tag::Image { link_type, dest_url: CowStr::Borrowed("#"), title, id })
        }
        other => other,
    });
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// An inline SVG line chart of one value per minute, oldest first (None: no sample), with
/// its title, the largest value and its unit.
pub(super) fn chart(title: &str, unit: &str, points: &[Option<f64>]) -> String {
    const W: f64 = 360.0;
    const H: f64 = 80.0;
    let max = points.iter().flatten().copied().fold(0.0_f64, f64::max);
    let scale = if max > 0.0 { max } else { 1.0 };
    let step = if points.len() > 1 { W / (points.len() - 1) as f64 } else { W };
    let mut path = String::new();
    let mut dots = String::new();
    let mut pen_down = false;
    for (i, p) in points.iter().enumerate() {
        match p {
            Some(v) => {
                let (x, y) = (i as f64 * step, H - (v / scale) * (H - 4.0) - 2.0);
                let _ = write!(path, "{}{x:.1},{y:.1} ", if pen_down { "L" } else { "M" });
                // A minute with a sample between two without one is a dot, not a line.
                if *v > 0.0 {
                    let _ = write!(dots, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\"/>");
                }
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    let shown_max = if max >= 100.0 || max.fract() == 0.0 { format!("{max:.0}") } else { format!("{max:.2}") };
    format!(
        "<figure class=\"chart\"><figcaption>{} <span class=\"max\">max {} {}</span></figcaption><svg \
viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{}\"><rect width=\"{W}\" \
height=\"{H}\" fill=\"#f6f8fa\"/><path d=\"{}\" fill=\"none\" stroke=\"#0b5cad\" stroke-width=\"2\"/><g \
fill=\"#0b5cad\">{dots}</g></svg></figure>",
        escape(title),
        escape(&shown_max),
        escape(unit),
        escape(title),
        path.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_in_elements_and_attributes() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        let mut h = Html::default();
        h.link("/ui/memory", &[("id", "a\"b<c>&d")], "<b>");
        assert_eq!(h.into_string(), "<a href=\"/ui/memory?id=a%22b%3Cc%3E%26d\">&lt;b&gt;</a>");
    }

    #[test]
    fn markdown_shows_raw_html_as_text_and_drops_script_links() {
        let html = markdown(
            "# Title\n\n<script>alert(1)</script>\n\nsee <b>bold</b> and [x](javascript:alert(1)) [y](https://e.org/a) [z](../b.md)\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("&lt;b&gt;bold&lt;/b&gt;"), "{html}");
        assert!(html.contains("<a href=\"#\">x</a>"), "{html}");
        assert!(html.contains("<a href=\"https://e.org/a\">y</a>"), "{html}");
        assert!(html.contains("<a href=\"../b.md\">z</a>"), "{html}");
        assert!(!markdown("[x]( JavaScript:alert(1))").contains("avascript"));
    }

    #[test]
    fn a_chart_draws_its_samples_and_breaks_at_gaps() {
        let svg = chart("requests", "per min", &[Some(0.0), Some(4.0), None, Some(2.0)]);
        assert!(svg.contains("d=\"M0.0,78.0 L120.0,2.0 M360.0,40.0\""), "{svg}");
        assert!(svg.contains("max 4 per min"), "{svg}");
        assert!(
            svg.contains("<circle cx=\"120.0\" cy=\"2.0\" r=\"2.5\"/><circle cx=\"360.0\" cy=\"40.0\" r=\"2.5\"/>"),
            "{svg}"
        );
    }
}

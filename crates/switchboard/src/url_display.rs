//! A URL as the browser will take it, for asking the user before opening it.
//!
//! A server's URL-mode elicitation and an authorization server's login page
//! are both links a hostile peer chose. What the user is shown must be what
//! the browser will open: [`url_display`] parses the text once, with the
//! WHATWG rules browsers follow (`url::Url`: `\` is `/` in `http(s)` URLs,
//! the host is mapped through IDNA to punycode), and hands back that one
//! parse's serialisation — the text to show and to give the browser — its
//! host, and what deserves a warning: a user name before `@`, a punycode
//! host (with its Unicode form), a label mixing scripts (Latin `pple` with a
//! Cyrillic `а`), plain `http`.

use std::fmt;

/// A URL parsed once as a browser parses it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DisplayUrl {
    /// The serialisation of the parse: the text to show and to hand to the
    /// browser (ASCII; the host in punycode).
    pub url: String,
    /// The host the browser connects to: lowercase ASCII (punycode for a
    /// non-ASCII name), an IPv4 address, or an IPv6 address without its
    /// brackets.
    pub host: String,
    /// What the user should check before opening it.
    pub warnings: Vec<UrlWarning>,
}

/// Why a URL deserves a second look.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlWarning {
    /// The URL names a user (and maybe a password) before `@`: text that
    /// looks like a site's name but is not where the browser goes.
    Userinfo,
    /// The host has punycode (`xn--`) labels; `unicode` is how it reads.
    Punycode {
        /// The host decoded to Unicode.
        unicode: String,
    },
    /// One label of the host mixes letters of several scripts, the mark
    /// of a look-alike (`аpple` with a Cyrillic `а`).
    MixedScript {
        /// The label, in Unicode.
        label: String,
        /// The scripts met in it, in order of appearance.
        scripts: Vec<&'static str>,
    },
    /// Plain `http`: what is typed into the page is not encrypted.
    NotHttps,
}

impl fmt::Display for UrlWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Userinfo => f.write_str(
                "the URL has a user name before '@': the site it opens is the domain shown, \
                 not what comes before the '@'",
            ),
            Self::Punycode { unicode } => write!(
                f,
                "the domain is punycode (xn--) for {unicode:?}: it may be made to look like \
                 another site's name; check it letter by letter"
            ),
            Self::MixedScript { label, scripts } => write!(
                f,
                "the name {label:?} mixes {} letters: it is likely a look-alike of another \
                 site's name",
                scripts.join(" and ")
            ),
            Self::NotHttps => {
                f.write_str("the URL is not https: what you enter there is not encrypted")
            }
        }
    }
}

/// Why [`url_display`] refused a URL.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlDisplayError {
    /// It does not parse as a URL.
    #[error("not a URL ({0})")]
    Invalid(String),
    /// It is not `http` or `https` (or has no host).
    #[error("not an http(s) URL with a host")]
    NotHttp,
}

/// Parses `url` once as a browser would (see the module docs).
///
/// # Errors
/// When it is not an absolute `http`/`https` URL with a host.
pub fn url_display(url: &str) -> Result<DisplayUrl, UrlDisplayError> {
    let parsed = url::Url::parse(url).map_err(|e| UrlDisplayError::Invalid(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlDisplayError::NotHttp);
    }
    let host = match parsed.host() {
        Some(url::Host::Domain(domain)) => domain.to_owned(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Err(UrlDisplayError::NotHttp),
    };
    let mut warnings = Vec::new();
    if !parsed.username().is_empty() || parsed.password().is_some() {
        warnings.push(UrlWarning::Userinfo);
    }
    if host.split('.').any(|label| label.starts_with("xn--")) {
        let (unicode, _) = idna::domain_to_unicode(&host);
        for label in unicode.split('.') {
            let scripts = scripts(label);
            if mixes(&scripts) {
                warnings.push(UrlWarning::MixedScript {
                    label: label.to_owned(),
                    scripts,
                });
            }
        }
        warnings.insert(0, UrlWarning::Punycode { unicode });
    }
    if parsed.scheme() == "http" {
        warnings.push(UrlWarning::NotHttps);
    }
    Ok(DisplayUrl {
        url: parsed.as_str().to_owned(),
        host,
        warnings,
    })
}

/// The scripts of the letters in `label`, in order of first appearance;
/// digits, `-` and other common characters belong to none.
fn scripts(label: &str) -> Vec<&'static str> {
    let mut seen = Vec::new();
    for c in label.chars() {
        if let Some(script) = script(c)
            && !seen.contains(&script)
        {
            seen.push(script);
        }
    }
    seen
}

/// Whether a label's scripts are a mix browsers distrust. Han, Hiragana,
/// Katakana, Hangul and Bopomofo go together (Japanese, Korean, Chinese
/// names), and with Latin; any other pair is a mix.
fn mixes(scripts: &[&'static str]) -> bool {
    let east_asian =
        |s: &&str| matches!(*s, "Han" | "Hiragana" | "Katakana" | "Hangul" | "Bopomofo");
    let others: Vec<_> = scripts
        .iter()
        .filter(|s| !east_asian(s) && **s != "Latin")
        .collect();
    match others.len() {
        0 => false,
        1 => scripts.len() > 1,
        _ => true,
    }
}

/// The script of a letter, by Unicode block; `None` for what is common to
/// all (digits, punctuation, marks) and for scripts not listed, which then
/// cannot raise a warning of their own.
fn script(c: char) -> Option<&'static str> {
    let cp = u32::from(c);
    Some(match cp {
        0x41..=0x5A | 0x61..=0x7A | 0xAA | 0xBA | 0xC0..=0xD6 | 0xD8..=0xF6 | 0xF8..=0x24F => {
            "Latin"
        }
        0x250..=0x2AF | 0x1D00..=0x1D7F | 0x1E00..=0x1EFF | 0x2C60..=0x2C7F | 0xA720..=0xA7FF => {
            "Latin"
        }
        0xAB30..=0xAB6F | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A => "Latin",
        0x370..=0x3FF | 0x1F00..=0x1FFF => "Greek",
        0x400..=0x52F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => "Cyrillic",
        0x530..=0x58F => "Armenian",
        0x590..=0x5FF => "Hebrew",
        0x600..=0x6FF | 0x750..=0x77F | 0x8A0..=0x8FF => "Arabic",
        0x700..=0x74F => "Syriac",
        0x780..=0x7BF => "Thaana",
        0x900..=0x97F => "Devanagari",
        0x980..=0x9FF => "Bengali",
        0xA00..=0xA7F => "Gurmukhi",
        0xA80..=0xAFF => "Gujarati",
        0xB00..=0xB7F => "Oriya",
        0xB80..=0xBFF => "Tamil",
        0xC00..=0xC7F => "Telugu",
        0xC80..=0xCFF => "Kannada",
        0xD00..=0xD7F => "Malayalam",
        0xD80..=0xDFF => "Sinhala",
        0xE00..=0xE7F => "Thai",
        0xE80..=0xEFF => "Lao",
        0xF00..=0xFFF => "Tibetan",
        0x1000..=0x109F => "Myanmar",
        0x10A0..=0x10FF | 0x2D00..=0x2D2F => "Georgian",
        0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => "Hangul",
        0x1200..=0x139F => "Ethiopic",
        0x13A0..=0x13FF | 0xAB70..=0xABBF => "Cherokee",
        0x1780..=0x17FF => "Khmer",
        0x3040..=0x309F => "Hiragana",
        0x30A0..=0x30FF | 0x31F0..=0x31FF => "Katakana",
        0x3100..=0x312F => "Bopomofo",
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF => "Han",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backslash_is_a_slash_so_the_host_is_what_comes_before_it() {
        let shown = url_display(r"https://evil.example\@bank.com/").unwrap();
        assert_eq!(shown.host, "evil.example");
        assert_eq!(shown.url, "https://evil.example/@bank.com/");
        assert!(shown.warnings.is_empty(), "{:?}", shown.warnings);
    }

    #[test]
    fn a_cyrillic_look_alike_shows_as_punycode_with_a_mixed_script_warning() {
        let shown = url_display("https://\u{430}pple.com/").unwrap();
        assert_eq!(shown.host, "xn--pple-43d.com");
        assert_eq!(shown.url, "https://xn--pple-43d.com/");
        assert_eq!(
            shown.warnings,
            [
                UrlWarning::Punycode {
                    unicode: "\u{430}pple.com".into()
                },
                UrlWarning::MixedScript {
                    label: "\u{430}pple".into(),
                    scripts: vec!["Cyrillic", "Latin"],
                },
            ]
        );
        assert!(shown.warnings[1].to_string().contains("Cyrillic and Latin"));
        // Already punycode: the same verdict.
        assert_eq!(url_display("https://xn--pple-43d.com/").unwrap(), shown);
    }

    #[test]
    fn single_script_and_east_asian_names_are_not_mixed() {
        for host in ["bücher.de", "пример.рф", "日本語のドメイン.jp", "ab日本.jp"]
        {
            let shown = url_display(&format!("https://{host}/")).unwrap();
            assert!(
                shown
                    .warnings
                    .iter()
                    .all(|w| matches!(w, UrlWarning::Punycode { .. })),
                "{host}: {:?}",
                shown.warnings
            );
            assert!(shown.host.is_ascii());
        }
    }

    #[test]
    fn userinfo_plain_http_and_other_schemes() {
        let shown = url_display("http://bank.com:pw@evil.example:8443/x").unwrap();
        assert_eq!(shown.host, "evil.example");
        assert_eq!(shown.warnings, [UrlWarning::Userinfo, UrlWarning::NotHttps]);
        assert_eq!(url_display("http://[::1]:80/").unwrap().host, "::1");
        assert_eq!(
            url_display("javascript:alert(1)"),
            Err(UrlDisplayError::NotHttp)
        );
        assert!(url_display("https://").is_err());
        assert!(url_display("not a url").is_err());
    }
}

//! Elicitation in the terminal: a form with one prompt per field, and
//! consent to open a URL.
//!
//! Nobody is asked when `--no-input` is given or there is no terminal: the
//! server gets `decline`, and the user a notice that says why.

use std::sync::Arc;

use inquire::error::CustomUserError;
use inquire::list_option::ListOption;
use inquire::validator::Validation;
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};
use serde_json::{Map, Number, Value};
use switchboard::handlers::BoxFuture;
use switchboard::types::elicitation::{ElicitResult, NumberType, PrimitiveSchemaDefinition};
use switchboard::url_display::{DisplayUrl, UrlWarning};
use switchboard::{ElicitationHandler, FormRequest, HandlerContext, HandlerError, UrlRequest};
use switchboard_hub::hub::{ToolAnswer, ToolAsk};

use crate::term::sanitize;
use crate::term::ui::Ui;

/// Answers `elicitation/create` by asking the user.
#[derive(Debug)]
pub(crate) struct TerminalElicitation {
    pub(crate) ui: Arc<Ui>,
}

impl ElicitationHandler for TerminalElicitation {
    fn elicit_form(
        &self,
        context: HandlerContext,
        request: FormRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        // A switchboard gateway's tool policy asking before a call: asked
        // as `call` asks it (once, always, no).
        if let Some(ask) = request
            .params
            .meta
            .as_ref()
            .and_then(ToolAsk::from_form_meta)
        {
            let approver = crate::policy::terminal_approver(self.ui.clone());
            return Box::pin(async move {
                let always = match approver.approve(ask).await {
                    ToolAnswer::Once => false,
                    ToolAnswer::Always => true,
                    _ => return Ok(ElicitResult::decline()),
                };
                let mut content = Map::new();
                content.insert("always".to_owned(), Value::Bool(always));
                Ok(ElicitResult::accept(Some(content)))
            });
        }
        let server = context.server.to_string();
        let declined = format!(
            "declined the form server `{server}` sent ({:?})",
            request.message
        );
        ask_or_decline(self.ui.clone(), declined, move |styled| {
            fill_form(&server, &request, styled)
        })
    }

    fn supports_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        context: HandlerContext,
        request: UrlRequest,
    ) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
        let server = context.server.to_string();
        let declined = format!(
            "declined server `{server}`'s request to open {} (domain {})",
            request.shown.url, request.shown.host
        );
        ask_or_decline(self.ui.clone(), declined, move |styled| {
            open_url(&server, &request, styled)
        })
    }
}

/// Puts `ask` to the user when the terminal is free (`styled`: whether to
/// use ANSI styling); when no one can be asked, declines, saying
/// `declined` and why.
fn ask_or_decline(
    ui: Arc<Ui>,
    declined: String,
    ask: impl FnOnce(bool) -> Result<ElicitResult, HandlerError> + Send + 'static,
) -> BoxFuture<'static, Result<ElicitResult, HandlerError>> {
    Box::pin(async move {
        if let Err(why) = ui.can_prompt() {
            ui.notice(&format!("{declined}: {}", why.reason()));
            return Ok(ElicitResult::decline());
        }
        let styled = ui.styled();
        ui.prompt(move || ask(styled))
            .await
            .map_err(HandlerError::Failed)?
    })
}

fn bold(text: &str, styled: bool) -> String {
    if styled {
        format!("\x1b[1m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

fn warn(text: &str, styled: bool) -> String {
    if styled {
        format!("\x1b[1;33m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// Esc and Ctrl-C dismiss the form (`cancel`); other prompt failures are
/// the handler's.
fn dismissed(error: &InquireError) -> bool {
    matches!(
        error,
        InquireError::OperationCanceled | InquireError::OperationInterrupted
    )
}

fn failed(error: InquireError) -> HandlerError {
    HandlerError::Failed(format!("the terminal prompt failed: {error}"))
}

fn fill_form(
    server: &str,
    request: &FormRequest,
    styled: bool,
) -> Result<ElicitResult, HandlerError> {
    eprintln!();
    eprintln!(
        "{} {}",
        bold(
            &format!("Server `{}` asks:", sanitize::line(server)),
            styled
        ),
        sanitize::term(&request.message)
    );
    eprintln!("(Esc dismisses the form; fields marked * are required)");
    let mut content = Map::new();
    for (name, field) in &request.schema.properties {
        let required = request.schema.is_required(name);
        match ask_field(name, field, required, request.defaults.get(name)) {
            Ok(Some(value)) => {
                content.insert(name.clone(), value);
            }
            Ok(None) => {}
            Err(error) if dismissed(&error) => return Ok(ElicitResult::cancel()),
            Err(error) => return Err(failed(error)),
        }
    }
    let send = format!("Send these answers to `{}`?", sanitize::line(server));
    match Confirm::new(&send)
        .with_default(true)
        .with_help_message("no declines the form")
        .prompt()
    {
        Ok(true) => Ok(ElicitResult::accept(Some(content))),
        Ok(false) => Ok(ElicitResult::decline()),
        Err(error) if dismissed(&error) => Ok(ElicitResult::cancel()),
        Err(error) => Err(failed(error)),
    }
}

/// What one field's prompt shows: title (or name), a star if required,
/// the description and hints.
fn label(name: &str, title: Option<&String>, required: bool) -> String {
    let title = sanitize::line(title.map_or(name, String::as_str));
    if required {
        format!("{title} *")
    } else {
        title.into_owned()
    }
}

fn help(description: Option<&String>, hints: &[String]) -> String {
    description
        .into_iter()
        .map(|d| sanitize::line(d).into_owned())
        .chain(hints.iter().cloned())
        .collect::<Vec<_>>()
        .join("; ")
}

type Answer = Result<Option<Value>, InquireError>;

fn ask_field(
    name: &str,
    field: &PrimitiveSchemaDefinition,
    required: bool,
    default: Option<&Value>,
) -> Answer {
    use PrimitiveSchemaDefinition as P;
    match field {
        P::String(s) => {
            let mut hints = Vec::new();
            if let Some(format) = &s.format {
                hints.push(format_hint(format));
            }
            match (s.min_length, s.max_length) {
                (Some(min), Some(max)) => hints.push(format!("{min} to {max} characters")),
                (Some(min), None) => hints.push(format!("at least {min} characters")),
                (None, Some(max)) => hints.push(format!("at most {max} characters")),
                (None, None) => {}
            }
            if !required {
                hints.push("empty leaves it out".into());
            }
            let (min, max, format) = (s.min_length, s.max_length, s.format.clone());
            let check = move |text: &str| -> Result<Validation, CustomUserError> {
                Ok(
                    match check_string(text, required, min, max, format.as_deref()) {
                        Ok(()) => Validation::Valid,
                        Err(message) => Validation::Invalid(message.into()),
                    },
                )
            };
            let label = label(name, s.title.as_ref(), required);
            let help = help(s.description.as_ref(), &hints);
            // The server's default is shown in the field: escaped like
            // everything else it wrote.
            let initial = sanitize::line(default.and_then(Value::as_str).unwrap_or(""));
            let text = Text::new(&label)
                .with_help_message(&help)
                .with_initial_value(&initial)
                .with_validator(check)
                .prompt()?;
            Ok((!text.is_empty()).then_some(Value::String(text)))
        }
        P::Number(n) => {
            let integer = n.r#type == NumberType::Integer;
            let mut hints = vec![
                if integer {
                    "a whole number"
                } else {
                    "a number"
                }
                .to_owned(),
            ];
            match (n.minimum, n.maximum) {
                (Some(min), Some(max)) => hints.push(format!("from {min} to {max}")),
                (Some(min), None) => hints.push(format!("at least {min}")),
                (None, Some(max)) => hints.push(format!("at most {max}")),
                (None, None) => {}
            }
            if !required {
                hints.push("empty leaves it out".into());
            }
            let (min, max) = (n.minimum, n.maximum);
            let check = move |text: &str| -> Result<Validation, CustomUserError> {
                Ok(match parse_number(text, integer, required, min, max) {
                    Ok(_) => Validation::Valid,
                    Err(message) => Validation::Invalid(message.into()),
                })
            };
            let label = label(name, n.title.as_ref(), required);
            let help = help(n.description.as_ref(), &hints);
            let initial = default.map(Value::to_string).unwrap_or_default();
            let text = Text::new(&label)
                .with_help_message(&help)
                .with_initial_value(&initial)
                .with_validator(check)
                .prompt()?;
            Ok(parse_number(&text, integer, required, min, max).unwrap_or(None))
        }
        P::Boolean(b) => {
            let label = label(name, b.title.as_ref(), required);
            let help = help(b.description.as_ref(), &[]);
            let mut prompt = Confirm::new(&label)
                .with_default(default.and_then(Value::as_bool).unwrap_or(false));
            if !help.is_empty() {
                prompt = prompt.with_help_message(&help);
            }
            Ok(Some(Value::Bool(prompt.prompt()?)))
        }
        P::UntitledSingleSelectEnum(e) => {
            let options: Vec<(String, String)> =
                e.values.iter().map(|v| (v.clone(), v.clone())).collect();
            let label = label(name, e.title.as_ref(), required);
            select_one(&label, e.description.as_ref(), options, required, default)
        }
        P::TitledSingleSelectEnum(e) => {
            let options = e
                .one_of
                .iter()
                .map(|o| (o.value.clone(), o.title.clone()))
                .collect();
            let label = label(name, e.title.as_ref(), required);
            select_one(&label, e.description.as_ref(), options, required, default)
        }
        P::LegacyTitledEnum(e) => {
            let names = e.enum_names.clone().unwrap_or_default();
            let options = e
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    (
                        v.clone(),
                        names.get(i).cloned().unwrap_or_else(|| v.clone()),
                    )
                })
                .collect();
            let label = label(name, e.title.as_ref(), required);
            select_one(&label, e.description.as_ref(), options, required, default)
        }
        P::UntitledMultiSelectEnum(e) => {
            let options = e
                .items
                .values
                .iter()
                .map(|v| (v.clone(), v.clone()))
                .collect();
            let label = label(name, e.title.as_ref(), required);
            select_many(
                &label,
                e.description.as_ref(),
                options,
                (e.min_items, e.max_items),
                default,
            )
        }
        P::TitledMultiSelectEnum(e) => {
            let options = e
                .items
                .any_of
                .iter()
                .map(|o| (o.value.clone(), o.title.clone()))
                .collect();
            let label = label(name, e.title.as_ref(), required);
            select_many(
                &label,
                e.description.as_ref(),
                options,
                (e.min_items, e.max_items),
                default,
            )
        }
        // The library only hands over flat forms; anything else is left out.
        _ => Ok(None),
    }
}

const LEAVE_OUT: &str = "(leave it out)";

/// A single choice; `options` are (value, what the user sees).
fn select_one(
    label: &str,
    description: Option<&String>,
    options: Vec<(String, String)>,
    required: bool,
    default: Option<&Value>,
) -> Answer {
    let mut shown: Vec<String> = options
        .iter()
        .map(|(_, title)| sanitize::line(title).into_owned())
        .collect();
    if !required {
        shown.push(LEAVE_OUT.into());
    }
    let start = default
        .and_then(Value::as_str)
        .and_then(|d| options.iter().position(|(v, _)| v == d))
        .unwrap_or(0);
    let mut prompt = Select::new(label, shown).with_starting_cursor(start);
    let help;
    if let Some(description) = description {
        help = sanitize::line(description).into_owned();
        prompt = prompt.with_help_message(&help);
    }
    let chosen = prompt.raw_prompt()?;
    Ok(options
        .get(chosen.index)
        .map(|(value, _)| Value::String(value.clone())))
}

fn select_many(
    label: &str,
    description: Option<&String>,
    options: Vec<(String, String)>,
    (min, max): (Option<u64>, Option<u64>),
    default: Option<&Value>,
) -> Answer {
    let shown: Vec<String> = options
        .iter()
        .map(|(_, title)| sanitize::line(title).into_owned())
        .collect();
    let preselected: Vec<usize> = default
        .and_then(Value::as_array)
        .map(|d| {
            d.iter()
                .filter_map(Value::as_str)
                .filter_map(|d| options.iter().position(|(v, _)| v == d))
                .collect()
        })
        .unwrap_or_default();
    let mut hints = vec!["space toggles, enter confirms".to_owned()];
    match (min, max) {
        (Some(min), Some(max)) => hints.push(format!("choose {min} to {max}")),
        (Some(min), None) => hints.push(format!("choose at least {min}")),
        (None, Some(max)) => hints.push(format!("choose at most {max}")),
        (None, None) => {}
    }
    let help = help(description, &hints);
    let check = move |chosen: &[ListOption<&String>]| -> Result<Validation, CustomUserError> {
        let n = chosen.len() as u64;
        Ok(if min.is_some_and(|m| n < m) {
            Validation::Invalid(format!("choose at least {}", min.unwrap_or(0)).into())
        } else if max.is_some_and(|m| n > m) {
            Validation::Invalid(format!("choose at most {}", max.unwrap_or(0)).into())
        } else {
            Validation::Valid
        })
    };
    let chosen = MultiSelect::new(label, shown)
        .with_default(&preselected)
        .with_help_message(&help)
        .with_validator(check)
        .raw_prompt()?;
    Ok(Some(Value::Array(
        chosen
            .iter()
            .filter_map(|c| options.get(c.index))
            .map(|(value, _)| Value::String(value.clone()))
            .collect(),
    )))
}

fn format_hint(format: &str) -> String {
    match format {
        "email" => "an email address, like name@example.com".into(),
        "uri" => "a URI, like https://example.com/page".into(),
        "date" => "a date, YYYY-MM-DD".into(),
        "date-time" => "a date and time, like 2025-01-31T09:30:00Z".into(),
        other => format!("format: {other}"),
    }
}

fn check_string(
    text: &str,
    required: bool,
    min: Option<u64>,
    max: Option<u64>,
    format: Option<&str>,
) -> Result<(), String> {
    if text.is_empty() {
        return if required {
            Err("this field is required".into())
        } else {
            Ok(())
        };
    }
    let length = text.chars().count() as u64;
    if let Some(min) = min.filter(|m| length < *m) {
        return Err(format!("at least {min} characters"));
    }
    if let Some(max) = max.filter(|m| length > *m) {
        return Err(format!("at most {max} characters"));
    }
    match format {
        // Checked as the library checks answers: one that fails there is not sent.
        Some(format) if !switchboard::handlers::string_matches_format(format, text) => {
            Err(format!("not {}", format_hint(format)))
        }
        _ => Ok(()),
    }
}

/// The number typed, `None` when left empty.
fn parse_number(
    text: &str,
    integer: bool,
    required: bool,
    min: Option<f64>,
    max: Option<f64>,
) -> Result<Option<Value>, String> {
    let text = text.trim();
    if text.is_empty() {
        return if required {
            Err("this field is required".into())
        } else {
            Ok(None)
        };
    }
    let (value, number) = if integer {
        let n: i64 = text
            .parse()
            .map_err(|_| format!("{text:?} is not a whole number"))?;
        (Value::from(n), n as f64)
    } else {
        let n: f64 = text
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite())
            .ok_or_else(|| format!("{text:?} is not a number"))?;
        let value = Number::from_f64(n)
            .map(Value::Number)
            .unwrap_or(Value::Null);
        (value, n)
    };
    if let Some(min) = min.filter(|m| number < *m) {
        return Err(format!("at least {min}"));
    }
    if let Some(max) = max.filter(|m| number > *m) {
        return Err(format!("at most {max}"));
    }
    Ok(Some(value))
}

/// What the user should check before opening a URL, in the words shown.
pub(crate) fn url_warnings(shown: &DisplayUrl) -> Vec<String> {
    shown
        .warnings
        .iter()
        .map(|warning| match warning {
            UrlWarning::Userinfo => format!(
                "the URL has a user name before '@'; the site it opens is {}, not what \
                 comes before the '@'",
                shown.host
            ),
            other => other.to_string(),
        })
        .collect()
}

fn open_url(
    server: &str,
    request: &UrlRequest,
    styled: bool,
) -> Result<ElicitResult, HandlerError> {
    eprintln!();
    eprintln!(
        "{} {}",
        bold(
            &format!(
                "Server `{}` asks you to open a page:",
                sanitize::line(server)
            ),
            styled
        ),
        sanitize::term(&request.message)
    );
    // What is shown is what the browser gets: one parse, its serialisation.
    let shown = &request.shown;
    eprintln!("  URL:    {}", sanitize::line(shown.url.as_str()));
    eprintln!("  domain: {}", warn(&sanitize::line(&shown.host), styled));
    for warning in url_warnings(shown) {
        eprintln!(
            "  {}",
            warn(&format!("warning: {}", sanitize::line(&warning)), styled)
        );
    }
    let question = format!("Open {} in your browser?", sanitize::line(&shown.host));
    match Confirm::new(&question)
        .with_default(false)
        .with_help_message("no declines")
        .prompt()
    {
        Ok(true) => {
            if let Err(error) = webbrowser::open(&shown.url) {
                eprintln!("could not start a browser ({error}); open the URL above yourself");
            }
            Ok(ElicitResult::accept(None))
        }
        Ok(false) => Ok(ElicitResult::decline()),
        Err(error) if dismissed(&error) => Ok(ElicitResult::cancel()),
        Err(error) => Err(failed(error)),
    }
}

/// Asks for the arguments a tool's `input_schema` wants and `given` lacks,
/// field by field with the forms elicitation uses (defaults, enums,
/// required fields marked): every field when nothing was given, else the
/// required ones still missing. A schema richer than the flat form a
/// prompt can ask (nested objects, arrays of objects) has its missing
/// required fields asked as JSON. `Ok(false)`: the user dismissed it.
pub(crate) fn ask_arguments(
    input_schema: &Value,
    given: &mut Map<String, Value>,
) -> Result<bool, String> {
    let ask_all = given.is_empty();
    let required: Vec<String> = input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Ok(schema) = serde_json::from_value::<switchboard::types::elicitation::ElicitationSchema>(
        input_schema.clone(),
    ) {
        for (name, field) in &schema.properties {
            let needed = required.contains(name);
            if given.contains_key(name) || !(ask_all || needed) {
                continue;
            }
            let default = input_schema.pointer(&format!("/properties/{name}/default"));
            match ask_field(name, field, needed, default) {
                Ok(Some(value)) => {
                    given.insert(name.clone(), value);
                }
                Ok(None) => {}
                Err(error) if dismissed(&error) => return Ok(false),
                Err(error) => return Err(error.to_string()),
            }
        }
        return Ok(true);
    }
    let missing: Vec<&String> = required
        .iter()
        .filter(|n| !given.contains_key(*n))
        .collect();
    for name in missing {
        let message = format!("{name} * (JSON)");
        match Text::new(&message).prompt() {
            Ok(text) => {
                let value =
                    serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()));
                given.insert(name.clone(), value);
            }
            Err(error) if dismissed(&error) => return Ok(false),
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use switchboard::url_display::url_display;

    use super::*;

    #[test]
    fn numbers_respect_type_and_bounds() {
        let int = |t| parse_number(t, true, true, Some(0.0), Some(150.0));
        assert_eq!(int("30"), Ok(Some(Value::from(30))));
        assert!(int("3.5").is_err());
        assert!(int("151").is_err());
        assert!(int("").is_err(), "required");
        assert_eq!(parse_number("", false, false, None, None), Ok(None));
        assert_eq!(
            parse_number("95.5", false, true, None, None),
            Ok(Some(serde_json::json!(95.5)))
        );
    }

    #[test]
    fn strings_follow_format_and_length() {
        assert!(check_string("a@b.co", true, None, None, Some("email")).is_ok());
        assert!(check_string("nope", true, None, None, Some("email")).is_err());
        assert!(check_string("2025-02-30", true, None, None, Some("date")).is_ok());
        assert!(check_string("2025-13-01", true, None, None, Some("date")).is_err());
        assert!(check_string("ab", true, Some(3), None, None).is_err());
        assert!(check_string("", false, Some(3), None, None).is_ok());
        assert!(check_string("", true, None, None, None).is_err());
    }

    #[test]
    fn suspicious_urls_are_flagged() {
        let warnings = |url: &str| url_warnings(&url_display(url).unwrap());
        assert!(warnings("https://example.com/x").is_empty());
        let w = warnings("https://xn--pple-43d.com/login");
        assert!(w[0].contains("punycode"), "{w:?}");
        let w = warnings("https://bank.com@evil.example/");
        assert!(w.iter().any(|w| w.contains("evil.example")), "{w:?}");
        let w = warnings("https://\u{430}pple.com/");
        assert!(
            w.iter().any(|w| w.contains("mixes Cyrillic and Latin")),
            "{w:?}"
        );
        assert!(warnings("http://example.com/")[0].contains("not https"));
    }
}

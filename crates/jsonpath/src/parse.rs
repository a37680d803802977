//! Reading a template into [`Segment`]s, as client-go's `jsonpath` parser reads it: text
//! outside braces as it is, and inside each `{...}` a run of steps, quoted text, numbers,
//! `true`/`false`, and the words `range` and `end`.

use std::num::NonZeroUsize;

use serde_json::{Number, Value};

/// A piece of a template.
#[derive(Debug, Clone)]
pub(super) enum Segment {
    /// Text outside braces, printed as it is; kept as a JSON string so that results can
    /// borrow it like any other value.
    Text(Value),
    /// `{path}`: the path's results, separated by spaces.
    Action(Vec<Step>),
    /// `{range path}body{end}`: the body once for each of the path's results.
    Range {
        /// What to iterate over.
        path: Vec<Step>,
        /// What to print for each result, with that result as the current value.
        body: Vec<Segment>,
    },
}

/// One step of a path: what it makes of each value that the steps before it found.
#[derive(Debug, Clone)]
pub(super) enum Step {
    /// `.name`, or one part of `['a.b']`: an object's member.
    Field(String),
    /// `.*`: every member of an object, every element of an array.
    Wildcard,
    /// `..`: the value and every object or array inside it, depth first, when not empty.
    Descendants,
    /// `[i]`, `[start:end:step]`, `[*]`.
    Slice(Slice),
    /// `[?(...)]`: the elements of an array that pass.
    Filter(Box<Filter>),
    /// `[a,b]`: the results of each branch, one branch after the other.
    Union(Vec<Vec<Step>>),
    /// `"text"`: the text, once, whatever came before.
    Text(Value),
    /// `3`, `1.5`, `true`: the constant, once for each value that came before.
    Constant(Value),
}

/// The elements `[start:end:step]` selects; negative indices count from the end.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slice {
    /// The first index (0 when not given).
    pub(super) start: i64,
    /// Where the slice stops.
    pub(super) end: SliceEnd,
    /// Take every `step`th element (1 when not given).
    pub(super) step: NonZeroUsize,
}

/// Where a slice stops.
#[derive(Debug, Clone, Copy)]
pub(super) enum SliceEnd {
    /// `[i]`: one element, right after the start.
    Next,
    /// `[i:]`: at the end of the array.
    Open,
    /// `[i:j]`: before index `j`.
    At(i64),
}

/// `[?(left op right)]` or `[?(left)]`.
#[derive(Debug, Clone)]
pub(super) struct Filter {
    /// The path from the element to the value tested.
    pub(super) left: Vec<Step>,
    /// The test.
    pub(super) test: Test,
}

/// What a filter asks of its left side.
#[derive(Debug, Clone)]
pub(super) enum Test {
    /// That it yields something.
    Exists,
    /// That it yields one value that compares so with the one value of the right side.
    Compare(Op, Vec<Step>),
}

/// A filter's comparison.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `>=`
    Ge,
}

/// What one action holds before it takes its place in the template.
enum Node {
    Step(Step),
    Range,
    End,
}

/// Reads a template, or says in kubectl's words what is wrong with it.
pub(super) fn template(text: &str) -> Result<Vec<Segment>, String> {
    // The ranges still open: each one's path, and the segments before it.
    let mut open: Vec<(Vec<Step>, Vec<Segment>)> = Vec::new();
    let mut segments = Vec::new();
    let mut rest = text;
    while let Some(brace) = rest.find('{') {
        if brace > 0 {
            segments.push(Segment::Text(Value::String(rest[..brace].to_owned())));
        }
        let mut cursor = Cursor {
            text: &rest[brace + 1..],
            pos: 0,
        };
        let nodes = cursor.action(true)?;
        rest = &cursor.text[cursor.pos..];
        match nodes.first() {
            Some(Node::Range) => {
                let path = steps(nodes.into_iter().skip(1))?;
                open.push((path, std::mem::take(&mut segments)));
            }
            Some(Node::End) if nodes.len() == 1 => {
                let (path, before) = open
                    .pop()
                    .ok_or_else(|| "not in range, nothing to end".to_owned())?;
                let body = std::mem::replace(&mut segments, before);
                segments.push(Segment::Range { path, body });
            }
            _ => segments.push(Segment::Action(steps(nodes)?)),
        }
    }
    if !rest.is_empty() {
        segments.push(Segment::Text(Value::String(rest.to_owned())));
    }
    if !open.is_empty() {
        return Err("unclosed range, expected {end}".to_owned());
    }
    Ok(segments)
}

/// Reads a path that stands alone: a filter's side, a union's branch, a bracketed key.
fn path(text: &str) -> Result<Vec<Step>, String> {
    steps(Cursor { text, pos: 0 }.action(false)?)
}

/// The steps of `nodes`, where `range` and `end` have no place.
fn steps(nodes: impl IntoIterator<Item = Node>) -> Result<Vec<Step>, String> {
    nodes
        .into_iter()
        .map(|node| match node {
            Node::Step(step) => Ok(step),
            Node::Range => Err("unexpected range: it must begin an action".to_owned()),
            Node::End => Err("unexpected end: it must stand alone in an action".to_owned()),
        })
        .collect()
}

/// A position in a template.
struct Cursor<'t> {
    text: &'t str,
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, prefix: &str) -> bool {
        let found = self.text[self.pos..].starts_with(prefix);
        if found {
            self.pos += prefix.len();
        }
        found
    }

    /// Reads the inside of an action up to its `}` (`braced`), or to the end of the text.
    fn action(&mut self, braced: bool) -> Result<Vec<Node>, String> {
        let mut nodes = Vec::new();
        loop {
            if self.text[self.pos..].starts_with("[?(") {
                nodes.push(Node::Step(self.filter()?));
                continue;
            }
            if self.eat("..") {
                if matches!(nodes.last(), Some(Node::Step(Step::Descendants))) {
                    return Err("invalid multiple recursive descent".to_owned());
                }
                nodes.push(Node::Step(Step::Descendants));
                if self.peek().is_some_and(is_alphanumeric) {
                    nodes.push(Node::Step(self.field()));
                }
                continue;
            }
            match self.peek() {
                Some('}') if braced => {
                    self.pos += 1;
                    return Ok(nodes);
                }
                None if !braced => return Ok(nodes),
                None | Some('\r' | '\n') => return Err("unclosed action".to_owned()),
                Some(' ' | '@' | '$') => self.pos += 1,
                Some('[') => {
                    self.pos += 1;
                    nodes.extend(self.bracket()?.into_iter().map(Node::Step));
                }
                Some(quote @ ('"' | '\'')) => {
                    self.pos += 1;
                    nodes.push(Node::Step(Step::Text(Value::String(self.quoted(quote)?))));
                }
                Some('.') => {
                    self.pos += 1;
                    nodes.push(Node::Step(self.field()));
                }
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    nodes.push(Node::Step(self.number()?));
                }
                Some(c) if is_alphanumeric(c) => nodes.push(self.identifier()?),
                Some(c) => return Err(format!("unrecognized character in action: {}", rune(c))),
            }
        }
    }

    /// A member's name, up to a terminator; `\` takes the next character as it is.
    fn field(&mut self) -> Step {
        let mut name = String::new();
        let mut escaped = false;
        while let Some(c) = self.peek() {
            if c == '\\' {
                self.pos += 1;
                escaped = true;
                name.extend(self.bump());
            } else if is_terminator(c) {
                break;
            } else {
                self.pos += c.len_utf8();
                name.push(c);
            }
        }
        if name == "*" && !escaped {
            Step::Wildcard
        } else {
            Step::Field(name)
        }
    }

    /// A word: `range`, `end`, `true` or `false`; kubectl knows no other.
    fn identifier(&mut self) -> Result<Node, String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| !is_terminator(c)) {
            self.bump();
        }
        match &self.text[start..self.pos] {
            "range" => Ok(Node::Range),
            "end" => Ok(Node::End),
            "true" => Ok(Node::Step(Step::Constant(Value::Bool(true)))),
            "false" => Ok(Node::Step(Step::Constant(Value::Bool(false)))),
            other => Err(format!("unrecognized identifier {other}")),
        }
    }

    /// A number: a sign, then digits and dots.
    fn number(&mut self) -> Result<Step, String> {
        let start = self.pos;
        self.pos += 1;
        while self.peek().is_some_and(|c| c == '.' || c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text = &self.text[start..self.pos];
        let number = match text.parse::<i64>() {
            Ok(integer) => Some(Number::from(integer)),
            Err(_) => text.parse::<f64>().ok().and_then(Number::from_f64),
        };
        number
            .map(|number| Step::Constant(Value::Number(number)))
            .ok_or_else(|| format!("cannot parse number {text}"))
    }

    /// Quoted text after its opening `quote`, unquoted as Go unquotes it.
    fn quoted(&mut self, quote: char) -> Result<String, String> {
        let start = self.pos;
        let mut escaped = false;
        loop {
            match self.bump() {
                None | Some('\n') => return Err("unterminated quoted string".to_owned()),
                Some(_) if escaped => escaped = false,
                Some('\\') => escaped = true,
                Some(c) if c == quote => break,
                Some(_) => {}
            }
        }
        let body = &self.text[start..self.pos - 1];
        unquote(body, quote)
            .ok_or_else(|| format!("unquote string {quote}{body}{quote} error invalid syntax"))
    }

    /// What follows a `[`: an index or slice, `*`, a `'key'`, or a union of those.
    fn bracket(&mut self) -> Result<Vec<Step>, String> {
        let start = self.pos;
        loop {
            match self.bump() {
                None | Some('\n') => return Err("unterminated array".to_owned()),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let inner = &self.text[start..self.pos - 1];
        let inner = if inner == "*" { ":" } else { inner };
        if inner.contains(',') {
            let branches = inner
                .split(',')
                .map(|branch| path(&format!("[{}]", branch.trim_matches(' '))))
                .collect::<Result<_, _>>()?;
            return Ok(vec![Step::Union(branches)]);
        }
        let key = inner
            .strip_prefix('\'')
            .and_then(|key| key.strip_suffix('\''))
            .filter(|key| !key.contains('\''));
        match key {
            // kubectl reads `['a.b']` as the path `.a.b`.
            Some(key) => path(&format!(".{key}")),
            None => Ok(vec![Step::Slice(slice(inner)?)]),
        }
    }

    /// `[?(...)]`, at its `[`.
    fn filter(&mut self) -> Result<Step, String> {
        self.pos += "[?(".len();
        let start = self.pos;
        let mut quote = None;
        let mut escaped = false;
        let end = loop {
            let at = self.pos;
            match (self.bump(), quote) {
                (None | Some('\n'), _) => return Err("unterminated filter".to_owned()),
                (Some(_), Some(_)) if escaped => escaped = false,
                (Some('\\'), Some(_)) => escaped = true,
                (Some(c), Some(open)) if c == open => quote = None,
                (Some(c @ ('"' | '\'')), None) => quote = Some(c),
                (Some(')'), None) => break at,
                _ => {}
            }
        };
        if self.bump() != Some(']') {
            return Err("unclosed array expect ]".to_owned());
        }
        let inner = &self.text[start..end];
        let is_operator = |c: char| "!<>=".contains(c);
        if let Some(at) = inner.find(is_operator).filter(|&at| at > 0) {
            let length = inner[at..]
                .find(|c| !is_operator(c))
                .unwrap_or(inner.len() - at);
            let (operator, right) = inner[at..].split_at(length);
            if !right.is_empty() {
                let op = match operator {
                    "==" => Op::Eq,
                    "!=" => Op::Ne,
                    "<" => Op::Lt,
                    ">" => Op::Gt,
                    "<=" => Op::Le,
                    ">=" => Op::Ge,
                    other => return Err(format!("unrecognized filter operator {other}")),
                };
                return Ok(Step::Filter(Box::new(Filter {
                    left: path(&inner[..at])?,
                    test: Test::Compare(op, path(right)?),
                })));
            }
        }
        Ok(Step::Filter(Box::new(Filter {
            left: path(inner)?,
            test: Test::Exists,
        })))
    }
}

/// `[start:end:step]` (what is inside the brackets), each part optional.
fn slice(text: &str) -> Result<Slice, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let is_index = |part: &&str| {
        let digits = part.strip_prefix('-').unwrap_or(part);
        digits.bytes().all(|b| b.is_ascii_digit())
    };
    if parts.len() > 3 || !parts.iter().all(is_index) {
        return Err(format!("invalid array index {text}"));
    }
    let index = |part: &str| {
        part.parse::<i64>()
            .map_err(|_| format!("array index {part} is not a number"))
    };
    let start = match parts[0] {
        "" => 0,
        part => index(part)?,
    };
    let end = match parts.get(1) {
        None => SliceEnd::Next,
        Some(&"") => SliceEnd::Open,
        Some(part) => SliceEnd::At(index(part)?),
    };
    let step = match parts.get(2) {
        None | Some(&"") => NonZeroUsize::MIN,
        Some(part) => usize::try_from(index(part)?)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or_else(|| "step must be > 0".to_owned())?,
    };
    Ok(Slice { start, end, step })
}

/// `body` unquoted as Go's `strconv.Unquote` would unquote it between `quote`s; `None` where
/// Go says "invalid syntax", and where Go would make a lone byte that is not UTF-8 (`\xff`).
fn unquote(body: &str, quote: char) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escape = chars.next()?;
        let mut code = |digits: usize, radix: u32| -> Option<u32> {
            (0..digits).try_fold(0, |code, _| {
                Some(code * radix + chars.next()?.to_digit(radix)?)
            })
        };
        let decoded = match escape {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\\' => '\\',
            '\'' | '"' if escape == quote => escape,
            'x' => char::from_u32(code(2, 16)?).filter(char::is_ascii)?,
            'u' => char::from_u32(code(4, 16)?)?,
            'U' => char::from_u32(code(8, 16)?)?,
            '0'..='7' => {
                let high = escape.to_digit(8)?;
                char::from_u32(high * 64 + code(2, 8)?).filter(char::is_ascii)?
            }
            _ => return None,
        };
        out.push(decoded);
    }
    Some(out)
}

/// Where a name or word stops.
fn is_terminator(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
    )
}

/// What may begin a word or follow `..`: a letter, a digit or `_`.
fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// A character as Go's `%#U` prints it: `U+002A '*'`.
fn rune(c: char) -> String {
    let code = u32::from(c);
    if c.is_control() || (c.is_whitespace() && c != ' ') {
        format!("U+{code:04X}")
    } else {
        format!("U+{code:04X} '{c}'")
    }
}

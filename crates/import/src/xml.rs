//! Reading an XML scan report one top-level element at a time.
//!
//! [`XmlRecords`] runs quick-xml's pull parser over the input and builds a small tree
//! ([`Element`]) of each child of the root element (an Nmap or Masscan `<host>`, `<runstats>`,
//! …), returning it with the line it starts on; only that element is ever in memory, so a
//! report of several GB is read in the memory of its largest host. The root's attributes are
//! kept ([`XmlRecords::root`]). A syntax error or an input that ends inside an element is an
//! [`XmlError`] at its line; reading stops there.

use std::io::BufRead;

use quick_xml::Reader;
use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

use crate::lines::Counted;

/// Nodes one record may hold: a bound on the memory a hostile file can take.
const MAX_NODES: usize = 1_000_000;

/// One element: its name, attributes, child elements and text (concatenated, unescaped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Element {
    /// The element name.
    pub name: String,
    /// Attributes in document order, values unescaped.
    pub attrs: Vec<(String, String)>,
    /// Child elements.
    pub children: Vec<Element>,
    /// Text content directly inside it.
    pub text: String,
}

impl Element {
    /// The value of attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The children named `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Where and why an XML input stopped being readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlError {
    /// The line where reading stopped.
    pub line: u64,
    /// Why.
    pub reason: String,
}

/// The top-level records of an XML report.
pub struct XmlRecords<R: BufRead> {
    reader: Reader<Counted<R>>,
    buf: Vec<u8>,
    root: Option<Element>,
    root_closed: bool,
    failed: bool,
}

impl<R: BufRead> XmlRecords<R> {
    /// Reads `input`.
    pub fn new(input: R) -> Self {
        let mut reader = Reader::from_reader(Counted::new(input));
        reader.config_mut().trim_text(false);
        Self {
            reader,
            buf: Vec::with_capacity(64 * 1024),
            root: None,
            root_closed: false,
            failed: false,
        }
    }

    /// The root element's name and attributes (no children), once its start was read.
    pub fn root(&self) -> Option<&Element> {
        self.root.as_ref()
    }

    fn line(&self) -> u64 {
        self.reader.get_ref().line()
    }

    fn fail(&mut self, line: u64, reason: String) -> XmlError {
        self.failed = true;
        XmlError { line, reason }
    }

    /// The next child of the root with the line it starts on, or `None` at the end.
    pub fn next_record(&mut self) -> Result<Option<(u64, Element)>, XmlError> {
        if self.failed {
            return Ok(None);
        }
        // The stack of open elements of the record being built; empty between records.
        let mut stack: Vec<Element> = Vec::new();
        let mut start_line = 0;
        let mut nodes = 0usize;
        loop {
            let before = self.line();
            self.buf.clear();
            let event = match self.reader.read_event_into(&mut self.buf) {
                Ok(event) => event,
                Err(e) => {
                    let line = self.line();
                    return Err(self.fail(line, format!("not well-formed XML: {e}")));
                }
            };
            let empty = matches!(event, Event::Empty(_));
            match event {
                Event::Start(e) | Event::Empty(e) if self.root.is_none() => {
                    let root = element(&e).map_err(|r| XmlError {
                        line: before,
                        reason: r,
                    });
                    let root = match root {
                        Ok(root) => root,
                        Err(e) => return Err(self.fail(e.line, e.reason)),
                    };
                    self.root = Some(root);
                    if empty {
                        self.root_closed = true;
                    }
                }
                Event::Start(e) => {
                    if stack.is_empty() {
                        start_line = before;
                    }
                    nodes += 1;
                    match element(&e) {
                        Ok(el) => stack.push(el),
                        Err(reason) => return Err(self.fail(before, reason)),
                    }
                }
                Event::Empty(e) => {
                    nodes += 1;
                    let el = match element(&e) {
                        Ok(el) => el,
                        Err(reason) => return Err(self.fail(before, reason)),
                    };
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(el),
                        None => return Ok(Some((before, el))),
                    }
                }
                Event::End(_) => match stack.pop() {
                    Some(done) => match stack.last_mut() {
                        Some(parent) => parent.children.push(done),
                        None => return Ok(Some((start_line, done))),
                    },
                    None => self.root_closed = true,
                },
                Event::Text(t) => {
                    if let Some(open) = stack.last_mut() {
                        // quick-xml has checked the text is UTF-8; line ends as XML 1.0.
                        open.text.push_str(&t.xml10_content());
                    }
                }
                Event::CData(t) => {
                    if let Some(open) = stack.last_mut() {
                        open.text.push_str(&t);
                    }
                }
                Event::GeneralRef(r) => {
                    if let Some(open) = stack.last_mut() {
                        let resolved = match r.resolve_char_ref() {
                            Ok(Some(c)) => Some(c),
                            Ok(None) => match &*r {
                                "amp" => Some('&'),
                                "lt" => Some('<'),
                                "gt" => Some('>'),
                                "quot" => Some('"'),
                                "apos" => Some('\''),
                                _ => None,
                            },
                            Err(_) => None,
                        };
                        match resolved {
                            Some(c) => open.text.push(c),
                            None => {
                                let name = r.to_string();
                                let line = self.line();
                                return Err(self.fail(line, format!("unknown entity &{name};")));
                            }
                        }
                    }
                }
                Event::Eof => {
                    let line = self.line();
                    if let Some(open) = stack.first() {
                        let reason = format!(
                            "the input ends inside <{}> begun on line {start_line} (truncated?)",
                            open.name
                        );
                        return Err(self.fail(line, reason));
                    }
                    if let Some(root) = &self.root
                        && !self.root_closed
                    {
                        let reason = format!(
                            "the input ends before </{}> (truncated?); the records before \
                             were read",
                            root.name
                        );
                        return Err(self.fail(line, reason));
                    }
                    if self.root.is_none() {
                        return Err(self.fail(line, "no XML element in the input".to_owned()));
                    }
                    return Ok(None);
                }
                Event::Decl(_) | Event::PI(_) | Event::DocType(_) | Event::Comment(_) => {}
            }
            if nodes > MAX_NODES {
                let reason = format!("one record holds more than {MAX_NODES} elements");
                return Err(self.fail(start_line, reason));
            }
        }
    }
}

fn element(e: &BytesStart<'_>) -> Result<Element, String> {
    let name = e.name().as_ref().to_owned();
    let mut attrs = Vec::new();
    for attr in e.attributes() {
        let attr = attr.map_err(|e| format!("bad attribute in <{name}>: {e}"))?;
        let key = attr.key.as_ref().to_owned();
        let value = attr
            .normalized_value(XmlVersion::Implicit1_0)
            .map_err(|e| format!("bad attribute {key} in <{name}>: {e}"))?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name,
        attrs,
        children: Vec::new(),
        text: String::new(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn records_lines_entities_and_truncation() {
        let xml = "<?xml version=\"1.0\"?>\n<run a=\"1\">\n<host n=\"x &amp; y\">\n<e>A&amp;B&#x41;</e>\n</host>\n<stat/>\n<host>\n<e>cut";
        let mut r = XmlRecords::new(xml.as_bytes());
        let (line, host) = r.next_record().unwrap().unwrap();
        assert_eq!(line, 3);
        assert_eq!(host.attr("n"), Some("x & y"));
        assert_eq!(host.child("e").unwrap().text, "A&BA");
        assert_eq!(r.root().unwrap().attr("a"), Some("1"));
        let (line, stat) = r.next_record().unwrap().unwrap();
        assert_eq!((line, stat.name.as_str()), (6, "stat"));
        let err = r.next_record().unwrap_err();
        assert!(
            err.reason.contains("inside <host> begun on line 7"),
            "{err:?}"
        );
        assert_eq!(r.next_record().unwrap(), None);
    }
}

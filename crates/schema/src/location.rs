//! Locations in definition files.

/// A place in a file: 1-based line and column (0 when unknown).
///
/// ```
/// let l = wlmap_schema::Location::new("a.yaml", 0, 0);
/// assert_eq!(l.to_string(), "a.yaml"); // line unknown
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// File name as given by the caller.
    pub file: String,
    /// 1-based line; 0 when unknown.
    pub line: u64,
    /// 1-based column; 0 when unknown.
    pub column: u64,
}

impl Location {
    /// Build a location.
    ///
    /// ```
    /// let l = wlmap_schema::Location::new("a.yaml", 3, 7);
    /// assert_eq!(l.to_string(), "a.yaml:3:7");
    /// ```
    pub fn new(file: &str, line: u64, column: u64) -> Self {
        Location {
            file: file.to_string(),
            line,
            column,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// The text of a definition file, used to point findings at the right line.
///
/// Decoded types carry no spans (they are plain serde types shared with JSON and the API), so
/// findings are located by searching the source for the component and then the value, in
/// order. This is exact for the common case of one definition per component name.
///
/// ```
/// let s = wlmap_schema::Source { file: "f.yaml", text: "kind: Karta\nname: pod\n" };
/// assert_eq!(s.find(&["name: pod"]).unwrap().to_string(), "f.yaml:2:1");
/// assert!(s.find(&["missing"]).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Source<'a> {
    /// File name.
    pub file: &'a str,
    /// File text.
    pub text: &'a str,
}

impl<'a> Source<'a> {
    /// Find the location of the last needle, each searched after the previous one.
    ///
    /// ```
    /// let s = wlmap_schema::Source { file: "f.yaml", text: "a: 1\nname: x\npath: .b\n" };
    /// assert_eq!(s.find(&["name: x", ".b"]).unwrap().line, 3);
    /// ```
    pub fn find(&self, needles: &[&str]) -> Option<Location> {
        let mut at = 0usize;
        let mut found = None;
        for n in needles.iter().filter(|n| !n.is_empty()) {
            let i = self.text[at..].find(n)? + at;
            found = Some(i);
            at = i;
        }
        let i = found?;
        let line_start = self.text[..i].rfind('\n').map_or(0, |p| p + 1);
        let line = self.text[..i].matches('\n').count() as u64 + 1;
        let column = self.text[line_start..i].chars().count() as u64 + 1;
        Some(Location::new(self.file, line, column))
    }
}

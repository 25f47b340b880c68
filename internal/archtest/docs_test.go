package archtest

// The tests of this file hold the documentation to what a reader relies
// on: links that lead somewhere, a README short enough to read, and no
// narration of the project's own work history (that goes in CHANGELOG.md,
// in the form a reader expects).

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the module root, relative to this package's directory.
const repoRoot = "../.."

// readmeLimit is the README's size bound in bytes: the README is the
// product page; measurements and long references belong in docs/.
const readmeLimit = 20_000

// docFiles returns README.md, CHANGELOG.md and every Markdown file under
// docs/, as paths relative to the module root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CHANGELOG.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk docs: %v", err)
	}
	return files
}

var (
	// fence matches a fenced code block; codeSpan an inline code span.
	fence    = regexp.MustCompile("(?ms)^[ \t]*```.*?^[ \t]*```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// link matches an inline Markdown link or image and captures its target.
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// heading matches an ATX heading and captures its text.
	heading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	// scheme matches a target with a URL scheme (https:, mailto:, ...).
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// stripCode removes fenced blocks and code spans, where brackets and
// parentheses are code, not links.
func stripCode(s string) string {
	return codeSpan.ReplaceAllString(fence.ReplaceAllString(s, ""), "")
}

// anchor returns the fragment GitHub gives a heading: lower case, spaces
// to hyphens, and every character other than a letter, digit, hyphen or
// underscore dropped.
func anchor(text string) string {
	text = strings.ReplaceAll(text, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the heading fragments of a Markdown file.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	set := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		set[anchor(m[1])] = true
	}
	return set
}

// TestDocLinksResolve fails on a relative link in README.md, CHANGELOG.md
// or docs/ whose file does not exist, or whose #fragment names no heading
// of the Markdown file it points at.
func TestDocLinksResolve(t *testing.T) {
	checked := 0
	for _, rel := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			t.Errorf("read %s: %v", rel, err)
			continue
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(b)), -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			path := filepath.Join(repoRoot, rel)
			if file != "" {
				path = filepath.Join(repoRoot, filepath.Dir(rel), filepath.FromSlash(file))
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s: link %q: %v", rel, target, err)
				continue
			}
			if frag != "" && !info.IsDir() && strings.HasSuffix(path, ".md") && !anchors(t, path)[frag] {
				t.Errorf("%s: link %q: no heading with anchor #%s in %s", rel, target, frag, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the link pattern or the file list is wrong")
	}
	t.Logf("%d relative links checked", checked)
}

// TestReadmeSize holds README.md under readmeLimit bytes.
func TestReadmeSize(t *testing.T) {
	info, err := os.Stat(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > readmeLimit {
		t.Errorf("README.md is %d bytes, over the limit of %d: move measurements and references to docs/", info.Size(), readmeLimit)
	}
}

// workHistory matches a numbered work session or issue, the narration of
// the project's own history that README, docs and code comments leave to
// CHANGELOG.md and the issue tracker.
var workHistory = regexp.MustCompile(`(?i)\b(sessions?|issues?) #?[0-9]+\b`)

// TestNoWorkHistoryNumbers fails on "session N" or "issue N" in the Go,
// Markdown and shell files and the Makefile of the module: README.md,
// CHANGELOG.md and docs/ included, testdata excluded (it holds third-party
// files as they came).
func TestNoWorkHistoryNumbers(t *testing.T) {
	var files []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".sh":
		default:
			if name != "Makefile" {
				return nil
			}
		}
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("walk module: %v", err)
	}
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			t.Errorf("read %s: %v", rel, err)
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := workHistory.FindString(line); m != "" {
				t.Errorf("%s:%d: %q names the project's work history; say why, not when (history goes in CHANGELOG.md)", rel, i+1, m)
			}
		}
	}
}

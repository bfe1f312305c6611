package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// textSecret is what FuzzText plants: letters and digits only, so that
// no quoting or escaping of it looks different.
const textSecret = "Zq7SECRETx"

// secretURLs hold textSecret where a URL may hold a secret: its query,
// its fragment, its userinfo, as net/url writes them.
var secretURLs = []string{
	"https://api.test/p?api_key=" + textSecret,
	"https://api.test/p#access_token=" + textSecret,
	"https://alice:" + textSecret + "@api.test/p",
	"//alice:" + textSecret + "@api.test/p?k=" + textSecret,
	"/p?k=" + textSecret,
	`https://api.test/p?q=%22&k=` + textSecret,
}

// FuzzText reads what a server may make a client's error say, before a
// URL that holds a secret (noise) and after it (cause), in the texts
// such a URL reaches a log in: a *url.Error after a text, after the
// Transport's words, and quoted once more. Text must not panic, must not
// let the secret out, must return at most MaxText bytes, and must read
// each text, and the noise alone, in time linear in its length, even
// past MaxText.
func FuzzText(f *testing.F) {
	for _, s := range hostileTexts(64) {
		f.Add(uint8(0), s, "EOF")
		f.Add(uint8(2), "x", s)
	}
	f.Add(uint8(1), `"`, `"`)
	f.Add(uint8(3), `p "?k=`, `\`)
	f.Fuzz(func(t *testing.T, which uint8, noise, cause string) {
		raw := secretURLs[int(which)%len(secretURLs)]
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		failed := (&url.Error{Op: "Get", URL: u.String(), Err: errors.New(cause)}).Error()
		texts := []string{
			noise + " " + failed,
			"retryhttp: no response after 3 attempt(s): " + failed,
			fmt.Sprintf("wrapped: %q", failed),
			noise + " " + fmt.Sprintf("wrapped: %q", failed),
		}
		// The texts again, after a long one, so that Text's bound falls
		// in them where the fuzzer chooses.
		at := int(which) + len(cause)
		for _, text := range texts[1:3] {
			texts = append(texts, strings.Repeat("x", MaxText-at%len(text))+" "+text)
		}
		for _, text := range append(texts, noise) {
			r := newReader(text)
			got := r.text()
			if r.work > perByte*len(text) {
				t.Errorf("Text(%q): work %d for %d bytes, want at most %d per byte", text, r.work, len(text), perByte)
			}
			bounded := Text(text)
			if len(bounded) > MaxText {
				t.Errorf("Text(%q) is %d bytes, want at most %d", text, len(bounded), MaxText)
			}
			if strings.Contains(noise+cause, textSecret) {
				continue
			}
			for _, out := range []string{got, bounded} {
				if strings.Contains(out, textSecret) {
					t.Errorf("Text(%q) = %q: the secret got through", text, out)
				}
			}
		}
	})
}

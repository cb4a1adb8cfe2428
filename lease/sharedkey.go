package lease

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// sharedKeyPolicy signs every try of a request with the account key, by
// Microsoft's "Authorize with Shared Key" rules for the Blob service
// (version 2009-09-19 and later, with the 2015-02-21 rule that a zero
// Content-Length is signed as empty). It sets x-ms-date from this host's
// clock: the service refuses a signature more than 15 minutes off, the one
// way in which leaderrun depends on the local wall clock.
type sharedKeyPolicy struct {
	account string
	key     []byte // decoded from base64
	now     func() time.Time
}

func newSharedKeyPolicy(account, key string) (*sharedKeyPolicy, error) {
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return nil, err
	}
	return &sharedKeyPolicy{account: account, key: k, now: time.Now}, nil
}

func (p *sharedKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	raw.Header.Set("X-Ms-Date", p.now().UTC().Format(http.TimeFormat))
	raw.Header.Set("Authorization", "SharedKey "+p.account+":"+p.signature(raw))
	return req.Next()
}

// signature is the base64 HMAC-SHA256 of the request's string to sign.
func (p *sharedKeyPolicy) signature(r *http.Request) string {
	mac := hmac.New(sha256.New, p.key)
	mac.Write([]byte(stringToSign(p.account, r)))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// stringToSign builds the Blob service's Shared Key string to sign:
//
//	VERB \n Content-Encoding \n Content-Language \n Content-Length \n
//	Content-MD5 \n Content-Type \n Date \n If-Modified-Since \n If-Match \n
//	If-None-Match \n If-Unmodified-Since \n Range \n
//	CanonicalizedHeaders CanonicalizedResource
//
// Content-Length comes from the request (Go sends it from ContentLength,
// not from the header map) and is empty when zero; Date is empty because
// x-ms-date is set.
func stringToSign(account string, r *http.Request) string {
	length := ""
	if r.ContentLength > 0 {
		length = strconv.FormatInt(r.ContentLength, 10)
	}
	var b strings.Builder
	b.WriteString(strings.ToUpper(r.Method))
	b.WriteByte('\n')
	for _, v := range []string{
		r.Header.Get("Content-Encoding"),
		r.Header.Get("Content-Language"),
		length,
		r.Header.Get("Content-Md5"),
		r.Header.Get("Content-Type"),
		r.Header.Get("Date"),
		r.Header.Get("If-Modified-Since"),
		r.Header.Get("If-Match"),
		r.Header.Get("If-None-Match"),
		r.Header.Get("If-Unmodified-Since"),
		r.Header.Get("Range"),
	} {
		b.WriteString(v)
		b.WriteByte('\n')
	}
	writeCanonicalHeaders(&b, r.Header)
	writeCanonicalResource(&b, account, r.URL)
	return b.String()
}

// writeCanonicalHeaders writes every x-ms- header as "name:value\n", names
// lowercased and sorted by headerLess. A value is signed as Go sends it,
// trimmed of surrounding whitespace; whitespace inside is kept, as Azurite
// and the Azure SDKs sign it. Several values of one name are joined with
// commas (leaderrun never sends any).
func writeCanonicalHeaders(b *strings.Builder, h http.Header) {
	values := map[string][]string{}
	for k, v := range h {
		name := strings.ToLower(k)
		if strings.HasPrefix(name, "x-ms-") {
			for _, s := range v {
				values[name] = append(values[name], textproto.TrimString(s))
			}
		}
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.SortFunc(names, compareHeaderNames)
	for _, name := range names {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(strings.Join(values[name], ","))
		b.WriteByte('\n')
	}
}

// compareHeaderNames orders lowercased header names as the service does,
// which is not byte order: punctuation sorts before digits, and digits
// before letters ("x-ms-meta-k_1" < "x-ms-meta-k1" < "x-ms-meta-ka"; byte
// order puts '_' between digits and letters). Metadata names are C#
// identifiers, so lowercased they hold only letters, digits and '_'; the
// fixed x-ms- names add '-'. Other bytes, which leaderrun never sends in a
// header name, sort after letters in byte order.
func compareHeaderNames(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if d := headerNameWeight(a[i]) - headerNameWeight(b[i]); d != 0 {
			return d
		}
	}
	return len(a) - len(b)
}

func headerNameWeight(c byte) int {
	switch {
	case c == '_':
		return 0
	case c == '-':
		return 1
	case c >= '0' && c <= '9':
		return 2 + int(c-'0')
	case c >= 'a' && c <= 'z':
		return 12 + int(c-'a')
	}
	return 38 + int(c)
}

// writeCanonicalResource writes "/account/path" with the path as sent
// (percent-encoded), then each query parameter as "\nname:value": names
// lowercased and sorted, values decoded, several values of one name sorted
// and joined with commas.
func writeCanonicalResource(b *strings.Builder, account string, u *url.URL) {
	b.WriteByte('/')
	b.WriteString(account)
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path)
	q, _ := url.ParseQuery(u.RawQuery) // a malformed pair is skipped, and the service refuses the signature
	params := map[string][]string{}
	for k, v := range q {
		name := strings.ToLower(k)
		params[name] = append(params[name], v...)
	}
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vs := params[name]
		slices.Sort(vs)
		b.WriteByte('\n')
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(strings.Join(vs, ","))
	}
}

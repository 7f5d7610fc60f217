package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// A hash chain shows where a file was changed, but anyone who changes a
// line can compute the chain again: only a hash kept elsewhere, or a
// signature, tells a re-chained file from the one exported. A signed
// export ends with one more line after its end line, the signature: an
// ed25519 signature, by a key kept away from the file, of the hash of the
// end line, which chains every line before it. Verifying with the public
// key catches any edit, re-chained or not; a file whose signature line was
// removed verifies as unsigned.

// KindSignature is the kind of a signed export's last line.
const KindSignature = "signature"

// AlgEd25519 is the one signature scheme.
const AlgEd25519 = "ed25519"

// Signature is a signed export's last line: Head is the hash of the end
// line (the line before it), Sig the signature of SignedMessage(Head).
type Signature struct {
	Alg   string `json:"alg"`
	KeyID string `json:"keyId"`
	Head  string `json:"head"`
	Sig   []byte `json:"sig"` // base64
}

// SignedMessage is what a signature signs: the format and the end line's
// hash, so a signature of something else never passes for an export's.
func SignedMessage(head string) []byte {
	return []byte(Format + " signature of the chain ending in " + head)
}

// KeyID names a public key: the first 8 bytes of its SHA-256, in hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// ErrUnsigned: the export carries no signature, and one was required.
var ErrUnsigned = errors.New("audit: the export is not signed")

// NewKeyPair writes a new ed25519 key pair: the private key to path (PEM
// PKCS #8, mode 0600) and the public key to path+".pub" (PEM PKIX). Both
// are the formats openssl reads and writes (openssl genpkey -algorithm
// ed25519). It refuses to replace an existing file.
func NewKeyPair(path string) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("audit: generate a key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("audit: encode the private key: %w", err)
	}
	pder, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("audit: encode the public key: %w", err)
	}
	if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(path+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder}), 0o644); err != nil {
		return nil, errors.Join(err, os.Remove(path))
	}
	return pub, nil
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("audit: create %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close() // the write's error is the one to report
		return fmt.Errorf("audit: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit: write %s: %w", path, err)
	}
	return nil
}

// LoadSigningKey reads an ed25519 private key (PEM PKCS #8). A file that
// other users may read is refused: whoever reads it can sign a forgery.
func LoadSigningKey(path string) (ed25519.PrivateKey, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("audit: signing key: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit: signing key %s has mode %04o: other users could sign with it; chmod 600 %s", path, info.Mode().Perm(), path)
	}
	block, err := readPEM(path, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(block)
	if err != nil {
		return nil, fmt.Errorf("audit: signing key %s: %v; make one with agentctl ledger keygen FILE", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("audit: signing key %s is a %T, not ed25519; make one with agentctl ledger keygen FILE", path, k)
	}
	return priv, nil
}

// LoadPublicKey reads an ed25519 public key (PEM PKIX).
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	block, err := readPEM(path, "PUBLIC KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(block)
	if err != nil {
		return nil, fmt.Errorf("audit: public key %s: %v; pass the .pub file agentctl ledger keygen wrote", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("audit: public key %s is a %T, not ed25519", path, k)
	}
	return pub, nil
}

func readPEM(path, typ string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit: read the key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != typ {
		return nil, fmt.Errorf("audit: %s holds no PEM %q block; pass the file agentctl ledger keygen wrote", path, typ)
	}
	return block.Bytes, nil
}

// Package auth holds the API tokens of `skein serve`: their scopes (read <
// run < admin), how a token is made, and how a presented token is checked.
//
// A token is "skn_" + a public id + "_" + 32 random bytes (base64url). The
// store keeps the id, the scope and the SHA-256 of the whole token, never
// the token: a plain hash suffices for a secret of 256 random bits, which
// no dictionary holds (a slow password hash would only slow every request).
// A presented token is found by its id and its hash compared in constant
// time.
package auth

// Package apitest holds tests of the driver packages' exported API, read
// as a user sees it (go doc): every exported function and method either
// returns the checked *store.Store or cannot reach stored data at all.
package apitest

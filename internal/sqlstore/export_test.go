package sqlstore

import (
	"reflect"
	"strconv"
)

// Statements returns every shared statement written for d, by field name
// (a list's entries as Name[i]).
func Statements(d Dialect) (map[string]string, error) {
	st, err := newStatements(d)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	v := reflect.ValueOf(st).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if f.Kind() == reflect.String {
			if f.String() != "" { // not an optional one the dialect lacks
				out[name] = f.String()
			}
			continue
		}
		for j := range f.Len() {
			out[name+"["+strconv.Itoa(j)+"]"] = f.Index(j).String()
		}
	}
	return out, nil
}

// ErrNoNamespace is what a transaction of an operation that found no row
// for its namespace ends with, before the row is created.
var ErrNoNamespace = errNoNamespace

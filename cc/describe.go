package cc

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"reef/units"
)

// Param describes one parameter of a registered algorithm: what an experiment file
// writes under params (Name), what kind of value it takes and its default, written the
// way an experiment file would write it.
type Param struct {
	// Name is the parameter's key in an experiment file (its yaml tag).
	Name string `json:"name"`
	// Kind is the value's kind: "time", "rate", "bytes", "float", "int", "bool" or
	// "string". Times and rates are in paper units (an experiment's time_scale applies
	// to them); sizes and plain numbers are not scaled.
	Kind string `json:"kind"`
	// Default is the algorithm's default value ("25µs", "0.8", "fabric", "never").
	Default string `json:"default"`
}

// Parameters describes the algorithm's parameters in the order its Params struct
// declares them, with the values Defaults returns. Fields of nested structs are named
// PARENT.FIELD; unexported fields and fields tagged yaml:"-" are left out, as the
// experiment decoder leaves them out.
func (s Spec) Parameters() []Param {
	if s.Defaults == nil {
		return nil
	}
	v := reflect.ValueOf(s.Defaults())
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	var out []Param
	describeStruct(v.Elem(), "", &out)
	return out
}

func describeStruct(v reflect.Value, prefix string, out *[]Param) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && !isUnit(fv.Type()) {
			describeStruct(fv, prefix+name+".", out)
			continue
		}
		kind, def := describeValue(fv)
		*out = append(*out, Param{Name: prefix + name, Kind: kind, Default: def})
	}
}

func isUnit(t reflect.Type) bool {
	return t == timeType || t == rateType || t == bytesType
}

var bytesType = reflect.TypeFor[units.Bytes]()

// describeValue names v's kind and writes it as an experiment file would.
func describeValue(v reflect.Value) (kind, text string) {
	switch {
	case v.Type() == timeType:
		return "time", units.Time(v.Int()).String()
	case v.Type() == rateType:
		return "rate", units.Rate(v.Int()).String()
	case v.Type() == bytesType:
		return "bytes", units.Bytes(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return "float", strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int", strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int", strconv.FormatUint(v.Uint(), 10)
	case reflect.Bool:
		return "bool", strconv.FormatBool(v.Bool())
	case reflect.String:
		return "string", strconv.Quote(v.String())
	}
	return v.Kind().String(), fmt.Sprint(v.Interface())
}

package cc

import (
	"fmt"
	"reflect"

	"reef/units"
)

// ScaleParams applies an experiment's time scale τ to a Params struct in place (DESIGN.md
// principle 4): every units.Time field is multiplied by τ and every units.Rate field is
// divided by τ. Sizes (units.Bytes) and plain numbers are left alone: BDPs stay the same
// in packets and targets the same in packet times. Nested structs are scaled too.
func ScaleParams(p Params, tau float64) error {
	if tau <= 0 {
		return fmt.Errorf("cc: time scale must be > 0, got %g", tau)
	}
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("cc: ScaleParams needs a pointer to a struct, got %T", p)
	}
	scaleValue(v.Elem(), units.TimeScale(tau))
	return nil
}

var (
	timeType = reflect.TypeFor[units.Time]()
	rateType = reflect.TypeFor[units.Rate]()
)

func scaleValue(v reflect.Value, ts units.TimeScale) {
	switch {
	case v.Type() == timeType:
		t := units.Time(v.Int())
		if t != units.Never {
			v.SetInt(int64(ts.Time(t)))
		}
	case v.Type() == rateType:
		v.SetInt(int64(ts.Rate(units.Rate(v.Int()))))
	case v.Kind() == reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				scaleValue(v.Field(i), ts)
			}
		}
	}
}

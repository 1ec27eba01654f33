package effective

// Declared is a difference a framework does not let Rival remove: the framework's effective
// configuration may differ from the workload in Field, for Reason. Every report that compares the
// framework shows it as a row of the fairness table.
type Declared struct {
	Framework string
	Field     string
	Reason    string
}

// declared is the table of differences that stay; everything else must be equal.
var declared = []Declared{}

// DeclaredFor returns the declared difference of framework in field.
func DeclaredFor(framework, field string) (Declared, bool) {
	for _, d := range declared {
		if d.Framework == framework && d.Field == field {
			return d, true
		}
	}
	return Declared{}, false
}

// AllDeclared returns the declared differences, in table order.
func AllDeclared() []Declared { return append([]Declared(nil), declared...) }

module github.com/airlockhq/airlock

go 1.26.0

require golang.org/x/sys v0.50.0

require github.com/google/go-cmp v0.7.0

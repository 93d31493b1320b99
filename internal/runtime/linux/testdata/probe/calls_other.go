//go:build linux && !amd64

package main

var calls []call

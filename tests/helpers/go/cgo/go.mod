module scorch.test/cgo

go 1.19

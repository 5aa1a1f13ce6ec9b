module scorch.test/spin

go 1.19

module scorch.test/stacks

go 1.19

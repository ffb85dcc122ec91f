module example.invalid/wedge

go 1.19

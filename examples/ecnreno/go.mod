module example.com/ecnreno

go 1.26.8

require reef v0.0.0

// reef is not published: a module that plugs into reef builds against a checkout of it.
// `reef build --with ./examples/ecnreno` uses the checkout it runs in and ignores this.
replace reef => ../..

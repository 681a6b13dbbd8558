module example.com/mycc

go 1.26.8

require reef v0.0.0

// reef is not published: your module builds against a checkout of it. reef build
// --with ./mycc --src REEF_CHECKOUT uses that checkout and ignores this line.
replace reef => ../../..

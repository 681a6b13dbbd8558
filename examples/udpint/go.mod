module example.com/udpint

go 1.26.8

require reef v0.0.0

// The program itself uses no reef code: it speaks the format docs/wire.md specifies.
// Its tests check it against reef's own encoder and decoder, from this checkout.
replace reef => ../..

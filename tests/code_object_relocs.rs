//! Dynamic relocations of real compiler output: a table of device-variable addresses
//! (`R_AMDGPU_RELATIVE64`, `R_AMDGPU_ABS64`), the 32-bit forms, and the relocations a loader
//! must refuse.

use crate::co_util;
use crate::common;

use co_util::{fixture, Elf};
use kfdrt::code_object::CodeObjectError;
use kfdrt::emu::Preset;
use kfdrt::{Error, Gpu, Kfd};

fn gpu(kfd: &Kfd) -> Gpu {
    kfd.gpu(0).unwrap()
}

fn co_error(r: kfdrt::Result<kfdrt::CodeObject>) -> CodeObjectError {
    match r {
        Err(Error::CodeObject(e)) => e,
        Err(e) => panic!("expected a code-object error, got {e}"),
        Ok(co) => panic!("expected a code-object error, loaded {co:?}"),
    }
}

/// Reads the 8-byte words of the relocated `table` of the relocation fixture.
fn table(co: &kfdrt::CodeObject) -> [u64; 3] {
    let at = co.symbol_address("table").unwrap() - co.base_address();
    let mut raw = [0u8; 24];
    co.memory().read(at, &mut raw).unwrap();
    std::array::from_fn(|i| u64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap()))
}

#[test]
fn dynamic_relocations_point_the_table_at_the_loaded_variables() {
    let Some(kfd) = common::under_test(
        "code_object_relocs::dynamic_relocations_point_the_table_at_the_loaded_variables",
        Preset::Gfx90a,
        1,
        &["relocs"],
    ) else {
        return;
    };
    let co = gpu(&kfd)
        .load_code_object(
            &common::code_object_for("relocs", &kfd.gpu(0).unwrap().info().gfx_target).unwrap(),
        )
        .unwrap();
    let expect =
        ["first_value", "second_value", "exported_value"].map(|n| co.symbol_address(n).unwrap());
    assert_eq!(table(&co), expect);
    // And the variables hold their initial values there.
    for (name, value) in [
        ("first_value", 11),
        ("second_value", 22),
        ("exported_value", 33),
    ] {
        let mut v = [0u8; 4];
        co.memory()
            .read(co.symbol_address(name).unwrap() - co.base_address(), &mut v)
            .unwrap();
        assert_eq!(i32::from_le_bytes(v), value, "{name}");
    }
    let e = co.symbol_address("no_such_variable").unwrap_err();
    assert!(
        e.to_string().contains("no symbol \"no_such_variable\""),
        "{e}"
    );
}

/// The relocation fixture with its symbol-relative relocation (`R_AMDGPU_ABS64` against
/// `exported_value`) turned into type `r_type`.
fn with_abs_relocation_type(r_type: u32) -> (Elf, usize) {
    let mut elf = Elf(fixture("relocs-gfx90a.elf"));
    let rela = elf
        .relas()
        .into_iter()
        .find(|&at| elf.u32_at(at + 8) == 3)
        .expect("an R_AMDGPU_ABS64");
    elf.put_u32(rela + 8, r_type);
    (elf, rela)
}

#[test]
fn abs32_relocations_write_the_halves_of_the_address() {
    let Some(kfd) = common::under_test(
        "code_object_relocs::abs32_relocations_write_the_halves_of_the_address",
        Preset::Gfx90a,
        1,
        &[],
    ) else {
        return;
    };
    let g = gpu(&kfd);
    for (r_type, half) in [(1u32, 0u32), (2, 32)] {
        let (elf, _) = with_abs_relocation_type(r_type);
        let co = g.load_code_object(&elf.0).unwrap();
        let target = co.symbol_address("exported_value").unwrap();
        let word = table(&co)[2] & 0xFFFF_FFFF;
        assert_eq!(word, (target >> half) & 0xFFFF_FFFF, "type {r_type}");
    }
    // R_AMDGPU_ABS32 of an address above 4 GiB does not fit: refused, not truncated.
    let (elf, _) = with_abs_relocation_type(6);
    let e = co_error(g.load_code_object(&elf.0));
    assert!(
        e.to_string().contains("R_AMDGPU_ABS32") && e.to_string().contains("does not fit"),
        "{e}"
    );
}

#[test]
fn bad_relocations_are_errors_naming_them() {
    let Some(kfd) = common::under_test(
        "code_object_relocs::bad_relocations_are_errors_naming_them",
        Preset::Gfx90a,
        1,
        &["relocs"],
    ) else {
        return;
    };
    let g = gpu(&kfd);
    let (elf, _) = with_abs_relocation_type(4);
    let e = co_error(g.load_code_object(&elf.0));
    assert!(matches!(
        e,
        CodeObjectError::UnsupportedRelocation { r_type: 4, .. }
    ));
    assert!(e.to_string().contains("R_AMDGPU_REL32 (4)"), "{e}");
    let (elf, _) = with_abs_relocation_type(200);
    assert!(co_error(g.load_code_object(&elf.0))
        .to_string()
        .contains("(200)"));
    // A target outside the image.
    let mut elf =
        Elf(common::code_object_for("relocs", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let rela = elf.relas()[0];
    elf.put_u64(rela, 0x10_0000);
    let e = co_error(g.load_code_object(&elf.0));
    assert!(
        matches!(
            e,
            CodeObjectError::BadRelocation {
                offset: 0x10_0000,
                ..
            }
        ),
        "{e}"
    );
    // A target straddling the end of its segment.
    let mut elf =
        Elf(common::code_object_for("relocs", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let data = elf.loads().into_iter().last().unwrap();
    let rela = elf.relas()[0];
    elf.put_u64(rela, data.p_vaddr + data.p_memsz - 4);
    assert!(matches!(
        co_error(g.load_code_object(&elf.0)),
        CodeObjectError::BadRelocation { .. }
    ));
    // An undefined symbol: exported_value's section index set to SHN_UNDEF.
    let mut elf =
        Elf(common::code_object_for("relocs", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let sym = elf.dynsym("exported_value");
    elf.put_u16(sym + 6, 0);
    let e = co_error(g.load_code_object(&elf.0));
    assert_eq!(
        e,
        CodeObjectError::UndefinedSymbol {
            name: "exported_value".into(),
            offset: elf.u64_at(elf.relas()[2]),
        }
    );
    // A symbol index past the end of .dynsym.
    let mut elf =
        Elf(common::code_object_for("relocs", &kfd.gpu(0).unwrap().info().gfx_target).unwrap());
    let rela = elf.relas()[2];
    elf.put_u32(rela + 12, 999);
    assert!(co_error(g.load_code_object(&elf.0))
        .to_string()
        .contains("symbol index 999"));
}
